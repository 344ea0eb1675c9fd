import { z } from "zod";
import { Microrub, PositiveMicrorub } from "./money";
import { HoldStatus } from "./billing";
import { InvitationStatus } from "./cabinet";
import { Scope } from "./scopes";
import { KeyName, LATEST_TIME, withoutNul } from "./text-field";

/** Bodies of the account cabinet (`/admin/v1`, docs/api.md "Account cabinet"). */
export const CreateUserRequest = z.strictObject({ email: z.email().max(320) });
export const CreateOrganizationRequest = z.strictObject({ name: withoutNul(z.string().trim().min(1).max(200)) });
export const AddMemberRequest = z.strictObject({ user_id: z.uuid() });
export const CreditRequest = z.strictObject({
  amount_microrub: PositiveMicrorub,
  reference: withoutNul(z.string().min(1).max(200)),
});
export const CreateKeyRequest = z.strictObject({
  user_id: z.uuid(),
  organization_id: z.uuid(),
  scopes: z.array(Scope).min(1),
  daily_budget_microrub: Microrub,
  name: withoutNul(z.string().min(1).max(200)).optional(),
});
export type CreateKeyRequest = z.infer<typeof CreateKeyRequest>;

/** Percents of a key's daily budget whose crossing sends `budget.threshold`: 1..100, at most 10, stored sorted. */
export const BudgetAlertPercents = z
  .array(z.int().min(1).max(100))
  .max(10)
  .refine((a) => new Set(a).size === a.length, "each percent at most once")
  .transform((a) => [...a].sort((x, y) => x - y));

/**
 * `PATCH /admin/v1/keys/{key_id}` (and the member's own): what a key's holder may change after its
 * creation; at least one field. `expires_at` a future time with its offset, or null (never expires).
 */
export const UpdateKeyRequest = z
  .strictObject({
    name: KeyName.optional(),
    daily_budget_microrub: Microrub.optional(),
    expires_at: z.iso
      .datetime({ offset: true })
      .refine((v) => Date.parse(v) <= LATEST_TIME, "must be before the year 10000")
      .nullable()
      .optional(),
    budget_alert_percents: BudgetAlertPercents.optional(),
  })
  .refine((b) => Object.keys(b).length > 0, "name at least one field to change");
export type UpdateKeyRequest = z.infer<typeof UpdateKeyRequest>;

/** `PATCH /admin/v1/organizations/{organization_id}`: under `low_balance_microrub` of available balance, `balance.low` is sent; null: never. */
export const UpdateOrganizationRequest = z.strictObject({ low_balance_microrub: Microrub.nullable() });
export type UpdateOrganizationRequest = z.infer<typeof UpdateOrganizationRequest>;

export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: z.coerce.number().int().min(1).optional(),
});

/** The operator's lists (`GET /admin/v1/users`, `/organizations`): the newest first. */
export const AdminListQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(500).default(100) });
/** `GET /admin/v1/users`: newest first; the members of one organization, and emails containing `q` (any case). */
export const AdminUsersQuery = AdminListQuery.extend({
  organization_id: z.uuid().optional(),
  q: withoutNul(z.string().trim().min(1).max(200)).optional(),
});
export type AdminUsersQuery = z.infer<typeof AdminUsersQuery>;
/**
 * `GET /admin/v1/organizations`: newest first, a page at a time; `q` finds organizations whose name
 * contains it (any case) or whose id it is.
 */
export const AdminOrganizationsQuery = z.strictObject({
  q: withoutNul(z.string().trim().max(200)).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  cursor: z.uuid().optional().describe("next_cursor of the previous page"),
});
export type AdminOrganizationsQuery = z.infer<typeof AdminOrganizationsQuery>;
/** `GET /admin/v1/catalog/activity`: the window of days whose charges are counted. */
export const CatalogActivityQuery = z.strictObject({ days: z.coerce.number().int().min(1).max(90).default(30) });
export const KeyListQuery = z.object({ organization_id: z.uuid().optional(), user_id: z.uuid().optional() });
/** The hold report (`GET /admin/v1/holds`). */
export const HoldListQuery = z.object({
  status: HoldStatus.optional(),
  source: withoutNul(z.string()).optional(),
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
/**
 * `POST /admin/v1/books/cross-check/holds/{hold_id}/repair`: an operator repairs one owner's record the
 * cross-check would not (`unverifiable`: no signature of billing covers it), on their own word; the
 * reason is logged and a recovery's ledger entries carry it.
 */
export const RepairHoldByHandRequest = z.strictObject({ reason: withoutNul(z.string().trim().min(1).max(160)) });
