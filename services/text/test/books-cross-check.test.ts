import { randomUUID } from "node:crypto";
import type { FinalHold, FinalHoldsCursor, FinalHoldsResponse } from "@meter/contracts";
import { verifyGrant } from "@meter/service-kit";
import { signedCall, testGrantKeys } from "@meter/testing";
import { LOCAL_MODEL, startTextStack, type TextStack } from "./support/text-stack";

/**
 * Text's side of billing's books cross-check, with billing, the gateway and text in the stack: what
 * text lists carries billing's signature of the grant behind each record, and rows written straight
 * into text's database (the two reproductions) move no money, with repair on or off.
 */
let s: TextStack;
beforeAll(async () => {
  s = await startTextStack();
}, 120_000);
afterAll(async () => {
  await s?.assertBooksBalance();
  await s?.close();
});

const message = (i: number) => ({ model: LOCAL_MODEL, max_tokens: 20, messages: [{ role: "user", content: `cross-checked ${i}` }] });

/** Text's final records as billing-ledger reads them (POST /internal/v1/final-holds, signed as billing-ledger). */
async function listed(): Promise<FinalHold[]> {
  const out: FinalHold[] = [];
  let after: FinalHoldsCursor | null = null;
  do {
    const body = { after, limit: 500 };
    const { headers, payload } = signedCall("billing-ledger", "text", { kind: "service", service: "billing-ledger" }, "POST", "/internal/v1/final-holds", body);
    const res = await fetch(`${s.stack.urls.text}/internal/v1/final-holds`, { method: "POST", headers, body: payload });
    expect(res.status).toBe(200);
    const page = (await res.json()) as FinalHoldsResponse;
    out.push(...page.holds);
    after = page.next;
  } while (after);
  return out;
}

interface Report {
  differences: { hold_id: string; kind: string; repaired: boolean; rejected?: string; unverified?: string }[];
}

it("lists every record with billing's signature of its grant: its placement's, or its allowance's", async () => {
  const a = await s.account();
  // The first request of a key goes per request while its allowance is granted; the later ones on it.
  for (let i = 0; i < 6; i++) expect((await s.call(a.key, "/v1/messages", message(i), { "idempotency-key": randomUUID() })).status).toBe(200);
  const mine = (await listed()).filter((h) => h.key_id === a.keyId);
  expect(mine).toHaveLength(6);
  expect(mine.some((h) => h.allowance) && mine.some((h) => !h.allowance)).toBe(true);
  const keys = testGrantKeys();
  for (const h of mine) {
    const claim = {
      hold_id: h.allowance?.allowance_id ?? h.hold_id,
      kind: h.allowance ? ("allowance" as const) : ("request" as const),
      source: "text",
      organization_id: a.organizationId,
      key_id: a.keyId,
      amount_microrub: h.grant!.amount_microrub,
    };
    expect(verifyGrant(keys.trusted, claim, h.grant?.signature)).toMatchObject({ ok: true });
    expect(h.grant!.amount_microrub).toBeGreaterThanOrEqual(h.amount_microrub);
  }
});

it("rows forged into text's database move no money through the cross-check, with repair on or off", async () => {
  const a = await s.account({ credit: 1_000_000 });
  const b = await s.account({ credit: 100_000_000 });
  // A media-jobs job's hold of organization a, active at billing.
  const job = randomUUID();
  const place = {
    ops: [{ op: "place", hold_id: job, key_id: a.keyId, amount_microrub: 50_000, operation: "image_edit", model: "m", source: "media-jobs", owner_ref: job }],
  };
  const placed = signedCall("media-jobs", "billing-ledger", { kind: "service", service: "media-jobs" }, "POST", "/internal/v1/hold-ops", place);
  const res = await fetch(`${s.stack.urls["billing-ledger"]}/internal/v1/hold-ops`, { method: "POST", headers: placed.headers, body: placed.payload });
  expect(((await res.json()) as { results: { ok: boolean }[] }).results[0]).toMatchObject({ ok: true });

  // Written straight into text's database: a's row naming media-jobs' hold; b's completed request of
  // 500 000 000 under a hold id billing never saw.
  const forge = async (account: { keyId: string; userId: string; organizationId: string }, holdId: string, amount: number) => {
    const id = randomUUID();
    await s.text.database.pool.query(
      `INSERT INTO text_requests (id, key_id, user_id, organization_id, endpoint, idempotency_key, fingerprint, model, plan,
         estimated_cost, hold_id, state, result, cost, attempts, created_at, updated_at, completed_at)
       VALUES ($1, $2, $3, $4, 'messages', $5, 'f', $6, '{}', $7, $8, 'completed', '{}', $7, 1,
         now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour')`,
      [id, account.keyId, account.userId, account.organizationId, randomUUID(), LOCAL_MODEL, amount, holdId],
    );
    return holdId;
  };
  const foreign = await forge(a, job, 50_000);
  const invented = await forge(b, randomUUID(), 500_000_000);
  const balances = async () => [await s.balance(a.organizationId), await s.balance(b.organizationId)];
  const before = await balances();

  for (const repair of [false, true]) {
    const report = (await s.admin("POST", "/admin/v1/books/cross-check", { repair })).body as unknown as Report;
    const forged = Object.fromEntries(report.differences.filter((d) => [foreign, invented].includes(d.hold_id)).map((d) => [d.hold_id, d]));
    expect(forged).toEqual({
      [foreign]: expect.objectContaining({ kind: "rejected_owner_claim", rejected: "foreign_hold", repaired: false }),
      [invented]: expect.objectContaining({ kind: "unverifiable", unverified: "unsigned", repaired: false }),
    });
    expect(await balances()).toEqual(before);
  }
  expect(before[1]).toMatchObject({ balance_microrub: 100_000_000, reserved_microrub: 0 });
  expect(before[0]).toMatchObject({ balance_microrub: 1_000_000, reserved_microrub: 50_000 });

  const release = { ops: [{ op: "release", hold_id: job, reason: "test" }] };
  const released = signedCall("media-jobs", "billing-ledger", { kind: "service", service: "media-jobs" }, "POST", "/internal/v1/hold-ops", release);
  await fetch(`${s.stack.urls["billing-ledger"]}/internal/v1/hold-ops`, { method: "POST", headers: released.headers, body: released.payload });
  // The forged rows would be reported on every pass: they go, as an operator would remove them.
  await s.text.database.pool.query("DELETE FROM text_requests WHERE hold_id = ANY($1::uuid[])", [[foreign, invented]]);
});
