import { z } from "zod";
import { Microrub, PositiveMicrorub } from "./money";
import { HoldStatus } from "./billing";
import { InvitationStatus } from "./cabinet";
import { Scope } from "./scopes";

/** Bodies of the account cabinet (`/admin/v1`, docs/api.md "Account cabinet"). */
export const CreateUserRequest = z.strictObject({ email: z.email().max(320) });
export const CreateOrganizationRequest = z.strictObject({ name: z.string().trim().min(1).max(200) });
export const AddMemberRequest = z.strictObject({ user_id: z.uuid() });
export const CreditRequest = z.strictObject({
  amount_microrub: PositiveMicrorub,
  reference: z.string().min(1).max(200),
});
export const CreateKeyRequest = z.strictObject({
  user_id: z.uuid(),
  organization_id: z.uuid(),
  scopes: z.array(Scope).min(1),
  daily_budget_microrub: Microrub,
  name: z.string().min(1).max(200).optional(),
});
export type CreateKeyRequest = z.infer<typeof CreateKeyRequest>;

export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: z.coerce.number().int().min(1).optional(),
});

/** The operator's lists (`GET /admin/v1/users`, `/organizations`): the newest first. */
export const AdminListQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(500).default(100) });
/** `GET /admin/v1/catalog/activity`: the window of days whose charges are counted. */
export const CatalogActivityQuery = z.strictObject({ days: z.coerce.number().int().min(1).max(90).default(30) });
export const KeyListQuery = z.object({ organization_id: z.uuid().optional(), user_id: z.uuid().optional() });
/** The hold report (`GET /admin/v1/holds`). */
export const HoldListQuery = z.object({
  status: HoldStatus.optional(),
  source: z.string().optional(),
  older_than_s: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .describe("Only holds placed more than this many seconds ago (with status=active: the stale ones), oldest first"),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});
export const InvitationListQuery = z.strictObject({ status: InvitationStatus.optional(), limit: z.coerce.number().int().min(1).max(500).default(100) });
/** `POST /admin/v1/books/cross-check`: repair what can be repaired unless told not to. */
export const CrossCheckRequest = z.strictObject({ repair: z.boolean().default(true) });
