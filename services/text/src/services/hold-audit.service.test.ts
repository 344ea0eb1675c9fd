import { randomUUID } from "node:crypto";
import type { TextRequestRepository } from "../repositories/text-request.repository";
import { HoldAuditService } from "./hold-audit.service";

it("answers for allowances: pending while open, the holder's release with the estimates used once closed, absent when unknown", async () => {
  const [open, closed, unknown] = [randomUUID(), randomUUID(), randomUUID()];
  const audit = new HoldAuditService(
    { findMany: () => Promise.resolve([]) } as unknown as TextRequestRepository,
    {
      existing: () =>
        Promise.resolve([
          { id: open, closedWith: null },
          { id: closed, closedWith: 12_000 },
        ]),
      closeUnknown: () => Promise.resolve([]),
    },
    () => Promise.resolve(null),
  );
  const placedAt = new Date().toISOString();
  const verdicts = await audit.audit({ holds: [open, closed, unknown].map((id) => ({ hold_id: id, owner_ref: id, placed_at: placedAt })) });
  expect(verdicts).toEqual([
    { hold_id: open, status: "pending" },
    { hold_id: closed, status: "release", reason: "allowance closed by its holder", used_microrub: 12_000 },
    { hold_id: unknown, status: "absent" },
  ]);
});
