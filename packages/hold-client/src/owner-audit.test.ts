import { randomUUID } from "node:crypto";
import { answerHoldAudit, HoldOwnerAudit } from "./owner-audit";

const restoredAt = new Date("2026-11-26T12:00:00.000Z");
const settled = { id: randomUUID(), holdId: randomUUID() };
const find = (ids: string[]) => Promise.resolve([settled].filter((r) => ids.includes(r.id)));
const outcome = () => ({ status: "settle" as const, amount_microrub: 700 });

it("a hold no record holds is unknown, not absent, when it was placed before the owner's restore point", async () => {
  const lost = randomUUID();
  const stray = randomUUID();
  const ageless = randomUUID();
  const verdicts = await answerHoldAudit(
    {
      holds: [
        { hold_id: settled.holdId, owner_ref: settled.id, placed_at: "2026-11-26T11:00:00.000Z" },
        { hold_id: lost, owner_ref: randomUUID(), placed_at: "2026-11-26T11:59:59.999Z" },
        { hold_id: stray, owner_ref: randomUUID(), placed_at: "2026-11-26T12:00:00.001Z" },
        { hold_id: ageless, owner_ref: randomUUID() },
      ],
    },
    find,
    outcome,
    restoredAt,
  );
  expect(verdicts).toEqual([
    { hold_id: settled.holdId, status: "settle", amount_microrub: 700 },
    { hold_id: lost, status: "unknown" },
    { hold_id: stray, status: "absent" },
    { hold_id: ageless, status: "unknown" },
  ]);
});

it("an owner never restored answers absent whatever the hold's age", async () => {
  const old = randomUUID();
  const verdicts = await answerHoldAudit({ holds: [{ hold_id: old, owner_ref: randomUUID(), placed_at: "2020-01-01T00:00:00.000Z" }] }, find, outcome, null);
  expect(verdicts).toEqual([{ hold_id: old, status: "absent" }]);
});

describe("HoldOwnerAudit", () => {
  const unfinished = { id: randomUUID(), holdId: randomUUID(), final: undefined };
  const settledRec = { id: randomUUID(), holdId: randomUUID(), final: { settles: true as const, amount: 250 } };
  const released = { id: randomUUID(), holdId: randomUUID(), final: { settles: false as const, reason: "the job failed; nothing charged" } };
  const records = [unfinished, settledRec, released];
  const audit = new HoldOwnerAudit(
    { findMany: async (ids) => records.filter((r) => ids.includes(r.id)), finalHolds: async () => [] },
    (r) => r.final,
    async () => null,
  );

  it("answers each record's hold as it resolved it: pending while unfinished, its settlement, or its release", async () => {
    const verdicts = await audit.audit({ holds: records.map((r) => ({ hold_id: r.holdId, owner_ref: r.id })) });
    expect(verdicts).toEqual([
      { hold_id: unfinished.holdId, status: "pending" },
      { hold_id: settledRec.holdId, status: "settle", amount_microrub: 250 },
      { hold_id: released.holdId, status: "release", reason: "the job failed; nothing charged" },
    ]);
  });

  it("a hold its record no longer holds (moved to a fresh id) is absent", async () => {
    const stray = randomUUID();
    expect(await audit.audit({ holds: [{ hold_id: stray, owner_ref: settledRec.id }] })).toEqual([{ hold_id: stray, status: "absent" }]);
  });
});
