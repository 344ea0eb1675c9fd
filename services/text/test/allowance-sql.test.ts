import { randomUUID } from "node:crypto";
import path from "node:path";
import type { FinalHold, FinalHoldsCursor, FinalHoldsResponse } from "@meter/contracts";
import { parseMessage } from "@meter/messaging";
import { createTestDatabase, type TestDatabase } from "@meter/testing";
import { createDatabase, type TextDatabase } from "../src/db";
import { withHoldCommand } from "../src/domain/final-command";
import type { NewTextRecord, TextPlan } from "../src/domain/text-record";
import { AllowanceRepository } from "../src/repositories/allowance.repository";
import { TextRequestRepository } from "../src/repositories/text-request.repository";
import { HoldAuditService } from "../src/services/hold-audit.service";

/**
 * The holder's statements on allowances, on real PostgreSQL (billing is not involved: what they commit
 * is what billing is later told): a request is placed on an allowance only while it is open and this
 * process's, never beyond what was granted, and an allowance closes with the exact estimates placed on
 * it, only once every request on it is final.
 */
let database: TestDatabase;
let handle: TextDatabase;
let requests: TextRequestRepository;
const ME = randomUUID();
let allowances: AllowanceRepository;
const KEY = randomUUID();
const ORG = randomUUID();

beforeAll(async () => {
  database = await createTestDatabase(path.resolve(__dirname, ".."));
  handle = createDatabase(database.url, 4);
  requests = new TextRequestRepository(handle.pool);
  allowances = new AllowanceRepository(handle.pool, ME, () => undefined);
  await requests.heartbeat(ME);
}, 60_000);
afterAll(async () => {
  await handle?.close();
  await database?.drop();
});

const plan = { endpoint: "messages", model: "m", estimatedCost: 100 } as unknown as TextPlan;

function newRecord(allowanceId: string | null, estimate = 100, owner = ME): NewTextRecord {
  const id = randomUUID();
  return {
    id,
    holdId: allowanceId ? randomUUID() : id,
    allowanceId,
    keyId: KEY,
    userId: randomUUID(),
    organizationId: ORG,
    endpoint: "messages",
    operation: "text",
    idempotencyKey: randomUUID(),
    requestId: randomUUID(),
    fingerprint: "f",
    model: "m",
    plan,
    estimatedCost: estimate,
    attempts: 1,
    ownerId: owner,
    nextAttemptAt: new Date(Date.now() + 60_000),
    createdAt: new Date(),
  };
}

async function openAllowance(granted: number, owner = ME): Promise<string> {
  const id = randomUUID();
  const repo = owner === ME ? allowances : new AllowanceRepository(handle.pool, owner, () => undefined);
  await repo.begin({ id, keyId: KEY, organizationId: ORG });
  expect(await repo.open(id, granted, new Date(Date.now() + 3_600_000), `billing-signed-${id}`)).toBe(true);
  return id;
}

const row = async (id: string) =>
  (await handle.pool.query<{ state: string; used: string; requests: number }>("SELECT state, used, requests FROM allowances WHERE id = $1", [id])).rows[0]!;
const outbox = async (messageId: string) =>
  (
    await handle.pool.query<{ routing_key: string; payload: Record<string, unknown> }>(
      "SELECT routing_key, payload FROM outbox_messages WHERE message_id = $1",
      [messageId],
    )
  ).rows[0];

it("claims placed on an open allowance add exactly their estimates to its used, in their own commit", async () => {
  const a = await openAllowance(1_000);
  const claims = await Promise.all([newRecord(a, 100), newRecord(a, 250), newRecord(null)].map((r) => requests.claim(r)));
  expect(claims.map((c) => "created" in c && c.created)).toEqual([true, true, true]);
  expect(await row(a)).toMatchObject({ state: "open", used: "350", requests: 2 });
});

it("a claim whose key is taken adds nothing; one on a closing allowance is not inserted at all", async () => {
  const a = await openAllowance(1_000);
  const first = newRecord(a);
  await requests.claim(first);
  const again = await requests.claim({ ...newRecord(a), idempotencyKey: first.idempotencyKey });
  expect(again).toMatchObject({ created: false, record: { id: first.id } });
  expect((await row(a)).used).toBe("100");

  await allowances.closing([a]);
  const late = newRecord(a);
  expect(await requests.claim(late)).toEqual({ allowanceClosed: true });
  expect(await requests.find(late.id)).toBeUndefined();
  expect((await row(a)).used).toBe("100");
});

it("never places on another process's allowance, nor past what was granted", async () => {
  const theirs = await openAllowance(1_000, randomUUID());
  expect(await requests.claim(newRecord(theirs))).toEqual({ allowanceClosed: true });

  const small = await openAllowance(150);
  await requests.claim(newRecord(small, 100));
  await expect(requests.claim(newRecord(small, 100))).rejects.toThrow(/allowances_used_within_granted/);
  expect((await row(small)).used).toBe("100");
});

it("closes only once no request on it is reserving, with its release carrying the estimates used", async () => {
  const a = await openAllowance(1_000);
  const one = await requests.claim(newRecord(a, 100));
  const two = await requests.claim(newRecord(a, 300));
  if (!("created" in one) || !("created" in two)) throw new Error("not claimed");
  await allowances.closing([a]);

  expect(await allowances.closeSettled()).not.toContain(a);
  expect(
    await requests.finish(
      withHoldCommand({
        record: one.record,
        state: "completed",
        result: { text: "x", stop_reason: "end_turn", usage: { input_tokens: 1, output_tokens: 1 } },
        cost: 40,
      }),
    ),
  ).toBe(true);
  expect(await allowances.closeSettled()).not.toContain(a);
  expect(
    await requests.finish(
      withHoldCommand({ record: two.record, state: "failed", error: { code: "upstream_error", message: "x" }, releaseReason: "upstream failed" }),
    ),
  ).toBe(true);
  expect(await allowances.closeSettled()).toContain(a);

  expect((await row(a)).state).toBe("closed");
  const spend = { allowance_id: a, key_id: KEY, operation: "text", model: "m" };
  expect(await outbox(one.record.holdId)).toEqual({
    routing_key: "billing.hold.settle",
    payload: {
      version: "v1",
      hold_id: one.record.holdId,
      // Every hold belongs to an organization (docs/api.md, "Holds belong to an organization").
      organization_id: ORG,
      amount_microrub: 40,
      allowance: { ...spend, reserved_microrub: 100, owner_ref: one.record.id },
      // The request log's fields ride on the command (docs/api.md, "Request log").
      log: expect.objectContaining({ endpoint: "/v1/messages", model: "m", status: 200, estimated_cost_microrub: 100 }),
    },
  });
  expect(await outbox(two.record.holdId)).toMatchObject({
    routing_key: "billing.hold.release",
    payload: { hold_id: two.record.holdId, allowance: { ...spend, reserved_microrub: 300, owner_ref: two.record.id } },
  });
  expect(await outbox(a)).toEqual({
    routing_key: "billing.hold.release",
    payload: { version: "v1", hold_id: a, organization_id: ORG, reason: "allowance closed", used_microrub: 400 },
  });
  // Every command written is one billing's consumer accepts: it went through the message catalog.
  for (const id of [one.record.holdId, two.record.holdId, a]) {
    const message = await outbox(id);
    expect(parseMessage(message!.routing_key, message!.payload)).toEqual(message!.payload);
  }
});

it("a refused request moves onto an open allowance under a fresh hold id; not onto a closing one", async () => {
  const a = await openAllowance(1_000);
  const claimed = await requests.claim(newRecord(null, 200));
  if (!("created" in claimed)) throw new Error("not claimed");
  const holdId = randomUUID();
  expect(await requests.moveToAllowance(claimed.record, a, holdId)).toMatchObject({ allowanceId: a, holdId });
  expect(await row(a)).toMatchObject({ used: "200", requests: 1 });

  const other = await requests.claim(newRecord(null, 200));
  if (!("created" in other)) throw new Error("not claimed");
  await allowances.closing([a]);
  expect(await requests.moveToAllowance(other.record, a, randomUUID())).toBeUndefined();
  expect((await row(a)).used).toBe("200");
});

it("the allowances of a stopped process become closing; a live one's stay open", async () => {
  const dead = randomUUID();
  const live = randomUUID();
  await requests.heartbeat(live);
  const ofDead = await openAllowance(1_000, dead);
  const ofLive = await openAllowance(1_000, live);
  await allowances.closingOfStale(15_000);
  expect((await row(ofDead)).state).toBe("closing");
  expect((await row(ofLive)).state).toBe("open");
});

it("the hold audit: an allowance is pending until closed, then its release with the estimates used; one never recorded is absent", async () => {
  const audit = new HoldAuditService(requests, allowances, async () => null);
  const open = await openAllowance(1_000);
  const closed = await openAllowance(1_000);
  await allowances.closing([closed]);
  await allowances.closeSettled();
  const unknown = randomUUID();
  const verdicts = await audit.audit({ holds: [open, closed, unknown].map((id) => ({ hold_id: id, owner_ref: id })) });
  expect(verdicts).toEqual([
    { hold_id: open, status: "pending" },
    { hold_id: closed, status: "release", reason: "allowance closed by its holder", used_microrub: 0 },
    { hold_id: unknown, status: "absent" },
  ]);
});

it("an allowance billing has no record of is closed whichever process holds it: no request is placed on it again, and it closes with its release", async () => {
  const audit = new HoldAuditService(requests, allowances, async () => null);
  const theirs = randomUUID();
  const lost = await openAllowance(1_000, theirs);
  const kept = await openAllowance(1_000, theirs);
  const onLost = await requests.claim(newRecord(lost, 100, theirs));
  if (!("created" in onLost)) throw new Error("not claimed");

  // Billing's books cross-check found requests on `lost` it had no allowance for (its database restored).
  expect(await audit.unknownAllowances({ allowance_ids: [lost, randomUUID()] })).toEqual({ closed: [lost] });
  expect(await audit.unknownAllowances({ allowance_ids: [lost] })).toEqual({ closed: [] });
  expect(await requests.claim(newRecord(lost, 100, theirs))).toEqual({ allowanceClosed: true });
  expect(await row(lost)).toMatchObject({ state: "closing", used: "100" });
  expect((await row(kept)).state).toBe("open");

  // Closed once its request is final, with the estimates used, as any closing allowance.
  expect(await allowances.closeSettled()).not.toContain(lost);
  const result = { text: "x", stop_reason: "end_turn" as const, usage: { input_tokens: 1, output_tokens: 1 } };
  expect(await requests.finish(withHoldCommand({ record: onLost.record, state: "completed", result, cost: 80 }))).toBe(true);
  expect(await allowances.closeSettled()).toContain(lost);
  expect((await row(lost)).state).toBe("closed");
  expect(await outbox(lost)).toMatchObject({ routing_key: "billing.hold.release", payload: { used_microrub: 100 } });
});

it("the books cross-check's listing carries billing's signature of each record's grant: its placement's, or its allowance's", async () => {
  const a = await openAllowance(1_000);
  const onAllowance = await requests.claim(newRecord(a, 100));
  const perRequest = await requests.claim(newRecord(null, 300));
  const unsigned = await requests.claim(newRecord(null, 200));
  if (!("created" in onAllowance) || !("created" in perRequest) || !("created" in unsigned)) throw new Error("not claimed");
  const result = { text: "x", stop_reason: "end_turn" as const, usage: { input_tokens: 1, output_tokens: 1 } };
  // The final-outcome statement keeps the signature the attempt's placement was answered with.
  await requests.finish(withHoldCommand({ record: onAllowance.record, state: "completed", result, cost: 40 }));
  await requests.finish(withHoldCommand({ record: perRequest.record, state: "completed", result, cost: 90, grantSignature: "billing-signed-placement" }));
  await requests.finish(
    withHoldCommand({ record: unsigned.record, state: "failed", error: { code: "upstream_error", message: "x" }, releaseReason: "failed" }),
  );

  const audit = new HoldAuditService(requests, allowances, async () => null);
  const listed: FinalHold[] = [];
  let after: FinalHoldsCursor | null = null;
  do {
    const page: FinalHoldsResponse = await audit.finalHolds({ after, limit: 100 });
    listed.push(...page.holds);
    after = page.next;
  } while (after);
  const grantOf = (id: string) => listed.find((h) => h.owner_ref === id)?.grant;
  expect(grantOf(onAllowance.record.id)).toEqual({ amount_microrub: 1_000, signature: `billing-signed-${a}` });
  expect(grantOf(perRequest.record.id)).toEqual({ amount_microrub: 300, signature: "billing-signed-placement" });
  expect(grantOf(unsigned.record.id)).toBeNull();
});
