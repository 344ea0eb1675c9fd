import { randomUUID } from "node:crypto";
import { answerFinalHolds, type FinalHoldRow } from "./final-holds";

function row(i: number, settles: boolean): FinalHoldRow {
  return {
    owner_ref: randomUUID(),
    hold_id: randomUUID(),
    organization_id: randomUUID(),
    key_id: randomUUID(),
    operation: "text",
    model: "m",
    estimated_cost: "9000",
    cost: settles ? String(1000 + i) : null,
    settles,
    completed_at: new Date(Date.UTC(2026, 10, 26, 12, 0, i)),
    grant_signature: `kid.1.signature-${i}`,
  };
}

it("answers a page of final holds with the cursor of its last record while more follow", async () => {
  const rows = [row(0, true), row(1, false), row(2, true)];
  const asked: number[] = [];
  const read = (_after: unknown, limit: number) => {
    asked.push(limit);
    return Promise.resolve(rows.slice(0, limit));
  };
  const page = await answerFinalHolds({ after: null, limit: 2 }, read, null);
  expect(asked).toEqual([3]);
  expect(page.holds).toEqual([
    expect.objectContaining({ hold_id: rows[0]!.hold_id, status: "settled", settled_microrub: 1000, amount_microrub: 9000 }),
    expect.objectContaining({ hold_id: rows[1]!.hold_id, status: "released", settled_microrub: null }),
  ]);
  expect(page.next).toEqual({ final_at: "2026-11-26T12:00:01.000Z", owner_ref: rows[1]!.owner_ref });
  expect(page.restored_at).toBeNull();

  const last = await answerFinalHolds({ after: page.next, limit: 5 }, () => Promise.resolve([rows[2]!]), new Date("2026-11-26T13:00:00.000Z"));
  expect(last).toMatchObject({ next: null, restored_at: "2026-11-26T13:00:00.000Z" });
});

it("names the allowance a record's hold was placed on, as its settle command does, and the grant that covers each", async () => {
  const allowanceId = randomUUID();
  const onAllowance = { ...row(0, true), allowance_id: allowanceId, allowance_granted: "50000" };
  const unsigned = { ...row(2, true), grant_signature: null };
  const page = await answerFinalHolds({ after: null, limit: 5 }, () => Promise.resolve([onAllowance, row(1, true), unsigned]), null);
  expect(page.holds[0]!.allowance).toEqual({
    allowance_id: allowanceId,
    key_id: onAllowance.key_id,
    reserved_microrub: 9000,
    operation: "text",
    model: "m",
    owner_ref: onAllowance.owner_ref,
  });
  expect(page.holds[1]!.allowance).toBeNull();
  // The allowance's signature covers what was granted to it; a per-request hold's, the record's estimate.
  expect(page.holds.map((h) => h.grant)).toEqual([
    { amount_microrub: 50_000, signature: "kid.1.signature-0" },
    { amount_microrub: 9000, signature: "kid.1.signature-1" },
    null,
  ]);
});
