import { z } from "zod";
import { Scope } from "./scopes";

/** The caller of a public endpoint, as authenticated by the gateway from an API key. */
export const KeyIdentity = z.object({
  kind: z.literal("key"),
  key_id: z.uuid(),
  user_id: z.uuid(),
  organization_id: z.uuid(),
  scopes: z.array(Scope),
});
export type KeyIdentity = z.infer<typeof KeyIdentity>;

/** The operator, authenticated by the gateway with ADMIN_TOKEN. */
export const AdminIdentity = z.object({ kind: z.literal("admin") });
export type AdminIdentity = z.infer<typeof AdminIdentity>;

/** One of our services calling another's internal API. */
export const ServiceIdentity = z.object({ kind: z.literal("service"), service: z.string().min(1) });
export type ServiceIdentity = z.infer<typeof ServiceIdentity>;

/**
 * An upload link is its own credential; the gateway passes such requests on as anonymous and the
 * files service checks the link's signature itself.
 */
export const AnonymousIdentity = z.object({ kind: z.literal("anonymous") });
export type AnonymousIdentity = z.infer<typeof AnonymousIdentity>;

export const Identity = z.discriminatedUnion("kind", [KeyIdentity, AdminIdentity, ServiceIdentity, AnonymousIdentity]);
export type Identity = z.infer<typeof Identity>;
export type IdentityKind = Identity["kind"];
