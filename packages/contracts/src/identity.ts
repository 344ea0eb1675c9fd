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

/**
 * A person signed in to the web cabinet (a session cookie the gateway checked at billing-ledger): a
 * member, with the organization chosen in the switcher (null until they belong to one), or the
 * operator (signed in once with ADMIN_TOKEN; no user). It is never accepted where a key is, nor a key
 * where it is: each door names the kinds it takes.
 */
export const SessionIdentity = z.discriminatedUnion("role", [
  z.object({ kind: z.literal("session"), role: z.literal("member"), session_id: z.uuid(), user_id: z.uuid(), organization_id: z.uuid().nullable() }),
  z.object({ kind: z.literal("session"), role: z.literal("operator"), session_id: z.uuid() }),
]);
export type SessionIdentity = z.infer<typeof SessionIdentity>;
export type MemberSessionIdentity = Extract<SessionIdentity, { role: "member" }>;

export const Identity = z.discriminatedUnion("kind", [KeyIdentity, AdminIdentity, ServiceIdentity, AnonymousIdentity, SessionIdentity]);
export type Identity = z.infer<typeof Identity>;
export type IdentityKind = Identity["kind"];
