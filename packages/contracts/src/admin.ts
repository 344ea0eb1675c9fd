import { z } from "zod";
import { Microrub, PositiveMicrorub } from "./money";
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
