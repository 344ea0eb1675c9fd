import { randomUUID } from "node:crypto";
import {
  BillingEndpoints,
  REFUSAL_CODES,
  REFUSAL_ENTRIES_PER_KEY_HOUR,
  type AnalyticsReport,
  type HoldOp,
  type Identity,
  type RefusalRecord,
  type RequestLogEntry,
  type RequestLogFields,
  type RequestLogList,
  type RequestLogTotals,
  type SessionIdentity,
} from "@meter/contracts";
import { seedAccount, SERVICE, startBilling, type BillingHarness } from "./support/billing-harness";

/**
 * The request log beyond paid entries (docs/api.md "Request log", "Analytics"): refusals the gateway
 * sends, collapsed and bounded per key; the reason of a failed entry; filters by outcome and model
 * prefix with their totals; the hourly figures, by key and by model; a key's activity and whether its
 * next typical request fits.
 */

const GATEWAY: Identity = { kind: "service", service: "gateway" };

let h: BillingHarness;
beforeAll(async () => {
  // The roll-up pass runs often here, so both of its sides (the figures, the entries it has not taken) are read.
  h = await startBilling({ env: { REQUEST_LOG_ROLLUP_INTERVAL_MS: "200" } });
});
afterAll(async () => {
  await h.assertBooksBalance();
  await h.close();
});

type Account = Awaited<ReturnType<typeof seedAccount>>;

const keyIdentity = (a: Account): Identity => ({ kind: "key", key_id: a.keyId, user_id: a.userId, organization_id: a.organizationId, scopes: ["text"] });
const memberOf = (a: Account): SessionIdentity => ({
  kind: "session",
  role: "member",
  session_id: randomUUID(),
  user_id: a.userId,
  organization_id: a.organizationId,
});

function logFields(over: Partial<RequestLogFields> = {}): RequestLogFields {
  return {
    endpoint: "/v1/messages",
    model: "meter-local-echo",
    status: 200,
    usage: { input_tokens: 12, output_tokens: 30 },
    estimated_cost_microrub: 50_000,
    requested_at: new Date().toISOString(),
    latency_ms: 40,
    upstream_latency_ms: 30,
    request_id: `req-${randomUUID()}`,
    idempotency_key: `idem-${randomUUID()}`,
    ...over,
  };
}

/** A paid request as its owner reports it: placed, then settled (charged) or released with its error. */
async function paid(a: Account, outcome: { settle: number } | { release: { code: string; message: string } }, log: Partial<RequestLogFields> = {}) {
  const hold = randomUUID();
  const estimate = log.estimated_cost_microrub ?? 50_000;
  const place: HoldOp = {
    op: "place",
    hold_id: hold,
    key_id: a.keyId,
    amount_microrub: estimate,
    operation: "text",
    model: "m",
    source: "text",
    owner_ref: `r-${hold}`,
  };
  const placed = await h.call("POST", BillingEndpoints.holdOps.path, SERVICE, { ops: [place] }).expect(200);
  expect(placed.body.results[0].ok).toBe(true);
  const final: HoldOp =
    "settle" in outcome
      ? { op: "settle", hold_id: hold, amount_microrub: outcome.settle, log: logFields({ ...log, estimated_cost_microrub: estimate }) }
      : {
          op: "release",
          hold_id: hold,
          reason: "upstream failed; nothing charged",
          log: logFields({
            status: 502,
            usage: { input_tokens: 0, output_tokens: 0 },
            upstream_latency_ms: null,
            ...log,
            estimated_cost_microrub: estimate,
            error: outcome.release,
          }),
        };
  const done = await h.call("POST", BillingEndpoints.holdOps.path, SERVICE, { ops: [final] }).expect(200);
  expect(done.body.results[0].ok).toBe(true);
  return hold;
}

function refusal(a: Account, over: Partial<RefusalRecord> = {}): RefusalRecord {
  const at = new Date().toISOString();
  return {
    key_id: a.keyId,
    endpoint: "/v1/messages",
    model: "meter-local-echo",
    status: 429,
    code: "daily_budget_exceeded",
    message: "this API key's daily budget does not cover this request",
    count: 1,
    first_at: at,
    last_at: at,
    request_id: `req-${randomUUID()}`,
    ...over,
  };
}

function sendRefusals(refusals: RefusalRecord[], signer: Identity = GATEWAY) {
  return h.call("POST", BillingEndpoints.recordRefusals.path, signer, { refusals });
}

async function keyLog(a: Account, query = ""): Promise<RequestLogEntry[]> {
  const res = await h.call("GET", `/v1/usage/requests?limit=100${query}`, keyIdentity(a)).expect(200);
  return (res.body as RequestLogList).data;
}

async function refusedRows(keyId: string): Promise<{ n: number; total: number }> {
  const rows = await h.db.$queryRaw<{ n: number; total: number }[]>`
    SELECT count(*)::int AS n, coalesce(sum(count), 0)::int AS total FROM request_log WHERE key_id = ${keyId}::uuid AND refused`;
  return rows[0]!;
}

describe("refusals in the request log", () => {
  it("lists a refusal with its status, error and model, charging nothing; identical ones are one entry with a count", async () => {
    const a = await seedAccount(h, { credit: 10_000_000 });
    const first = new Date(Date.now() - 2_000).toISOString();
    const last = new Date().toISOString();
    await sendRefusals([refusal(a, { first_at: first, last_at: first, count: 3 })]).expect(200, { recorded: 1 });
    await sendRefusals([refusal(a, { first_at: last, last_at: last, count: 2, request_id: "req-latest" })]).expect(200);
    await sendRefusals([refusal(a, { status: 404, code: "model_not_found", model: "no-such-model", message: "model no-such-model does not exist" })]).expect(
      200,
    );
    await sendRefusals([refusal(a, { status: 413, code: "payload_too_large", model: null, endpoint: "/v1/files", message: "too large" })]).expect(200);

    const entries = await keyLog(a);
    expect(entries).toHaveLength(3);
    const budget = entries.find((e) => e.error?.code === "daily_budget_exceeded")!;
    expect(budget).toMatchObject({
      object: "request",
      outcome: "refused",
      status: 429,
      model: "meter-local-echo",
      endpoint: "/v1/messages",
      count: 5,
      cost_microrub: 0,
      estimated_cost_microrub: 0,
      usage: null,
      request_id: "req-latest",
      error: { code: "daily_budget_exceeded", message: "this API key's daily budget does not cover this request" },
      key: { id: a.keyId },
    });
    expect(budget.created_at).toBe(first);
    expect(budget.completed_at).toBe(last);
    expect(entries.find((e) => e.status === 404)).toMatchObject({ outcome: "refused", model: "no-such-model", count: 1, error: { code: "model_not_found" } });
    expect(entries.find((e) => e.status === 413)).toMatchObject({ outcome: "refused", model: null, endpoint: "/v1/files" });
    // Nothing moved: the balance is the credit, whole.
    const balance = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200);
    expect(balance.body).toMatchObject({ balance_microrub: 10_000_000, reserved_microrub: 0 });
  });

  it("takes refusals from the gateway only, and checks each one", async () => {
    const a = await seedAccount(h);
    await sendRefusals([refusal(a)], SERVICE).expect(403);
    await sendRefusals([refusal(a, { status: 500 as never })]).expect(400);
    await sendRefusals([refusal(a, { code: "internal_error" as never })]).expect(400);
    await sendRefusals([refusal(a, { model: "bad\u0000model" })]).expect(400);
    // A key billing does not know is dropped, not an error: the gateway may hold a refusal for a key deleted since.
    await sendRefusals([refusal(a, { key_id: randomUUID() })]).expect(200, { recorded: 0 });
    expect(await keyLog(a)).toEqual([]);
  });

  it(`keeps a flood of refusals from one key bounded: at most ${REFUSAL_ENTRIES_PER_KEY_HOUR} entries an hour of its own, then one per code`, async () => {
    const a = await seedAccount(h);
    const other = await seedAccount(h);
    const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 + 60_000).toISOString();
    // 2,000 refusals naming 1,000 different models, in batches as the gateway sends them, some at once.
    const batches = Array.from({ length: 8 }, (_, b) =>
      Array.from({ length: 250 }, (_, i) =>
        refusal(a, { model: `model-${(b * 250 + i) % 1000}`, first_at: hour, last_at: hour, ...(i % 2 ? { status: 404, code: "model_not_found" } : {}) }),
      ),
    );
    await Promise.all(batches.map((batch) => sendRefusals(batch).expect(200)));
    await sendRefusals([refusal(other, { first_at: hour, last_at: hour })]).expect(200);

    const rows = await refusedRows(a.keyId);
    // 20 itemized, then one entry for each of the two codes the flood used.
    expect(rows).toEqual({ n: REFUSAL_ENTRIES_PER_KEY_HOUR + 2, total: 2_000 });
    expect(REFUSAL_ENTRIES_PER_KEY_HOUR + REFUSAL_CODES.length).toBeLessThan(50);
    const entries = await keyLog(a, "&status=refused");
    expect(
      entries
        .filter((e) => e.model === null)
        .map((e) => e.error?.code)
        .sort(),
    ).toEqual(["daily_budget_exceeded", "model_not_found"]);
    // Another key is not crowded out.
    expect(await refusedRows(other.keyId)).toEqual({ n: 1, total: 1 });
    // The same flood an hour later opens new entries for that hour (the bound is per hour).
    const next = new Date(Date.parse(hour) + 3_600_000).toISOString();
    await sendRefusals(Array.from({ length: 50 }, (_, i) => refusal(a, { model: `late-${i}`, first_at: next, last_at: next }))).expect(200);
    expect(await refusedRows(a.keyId)).toEqual({ n: 2 * REFUSAL_ENTRIES_PER_KEY_HOUR + 3, total: 2_050 });
  });
});

describe("the log's filters, reasons and totals", () => {
  let a: Account;
  beforeAll(async () => {
    a = await seedAccount(h, { credit: 100_000_000 });
    await paid(a, { settle: 20_000 }, { model: "meter-local-echo", usage: { input_tokens: 10, output_tokens: 20 } });
    await paid(a, { settle: 30_000 }, { model: "meter-local-echo-2", usage: { input_tokens: 5, output_tokens: 7 } });
    await paid(a, { release: { code: "upstream_error", message: "the upstream answered 400; nothing was charged" } }, { model: "fake-claude" });
    await sendRefusals([refusal(a, { count: 4, model: "fake-claude" }), refusal(a, { status: 404, code: "model_not_found", model: "meter-localx" })]).expect(
      200,
    );
  });

  it("gives a failed entry its reason, and filters by outcome and by the start of a model id", async () => {
    const failed = await keyLog(a, "&status=failed");
    expect(failed).toEqual([
      expect.objectContaining({
        outcome: "failed",
        status: 502,
        model: "fake-claude",
        count: 1,
        error: { code: "upstream_error", message: "the upstream answered 400; nothing was charged" },
      }),
    ]);
    expect((await keyLog(a, "&status=succeeded")).map((e) => [e.model, e.error])).toEqual([
      ["meter-local-echo-2", null],
      ["meter-local-echo", null],
    ]);
    expect((await keyLog(a, "&status=refused")).map((e) => e.error!.code).sort()).toEqual(["daily_budget_exceeded", "model_not_found"]);
    expect((await keyLog(a, "&model_prefix=meter-local")).map((e) => e.model).sort()).toEqual(["meter-local-echo", "meter-local-echo-2", "meter-localx"]);
    expect((await keyLog(a, "&model_prefix=meter-local-echo&status=succeeded")).length).toBe(2);
    expect(await keyLog(a, "&model=meter-local")).toEqual([]);
  });

  it("adds up a filter, every page of it, from the hourly figures and the edges of the window alike", async () => {
    const base = `/admin/v1/organizations/${a.organizationId}/requests/totals`;
    const all = (await h.call("GET", base).expect(200)).body as RequestLogTotals;
    expect(all).toEqual({
      object: "request_totals",
      requests: 3 + 4 + 1,
      succeeded: 2,
      failed: 1,
      refused: 5,
      input_tokens: 15,
      output_tokens: 27,
      cost_microrub: 50_000,
    });
    // A window that starts and ends inside hours reads those partial hours from the entries.
    const from = new Date(Date.now() - 3 * 3_600_000 - 1_234).toISOString();
    const to = new Date(Date.now() + 2 * 3_600_000 + 4_321).toISOString();
    const windowed = await h.call("GET", `${base}?from=${from}&to=${to}`).expect(200);
    expect(windowed.body).toEqual(all);
    await waitForRollup();
    expect((await h.call("GET", `${base}?from=${from}&to=${to}`).expect(200)).body).toEqual(all);
    expect((await h.call("GET", `${base}?status=refused`).expect(200)).body).toMatchObject({ requests: 5, refused: 5, succeeded: 0, cost_microrub: 0 });
    expect((await h.call("GET", `${base}?status=502`).expect(200)).body).toMatchObject({ requests: 1, failed: 1, cost_microrub: 0 });
    expect((await h.call("GET", `${base}?model_prefix=meter-local-echo`).expect(200)).body).toMatchObject({ requests: 2, cost_microrub: 50_000 });
    // The member reads their organization's the same way.
    const mine = await h.call("GET", "/cabinet/v1/requests/totals?status=succeeded", memberOf(a)).expect(200);
    expect(mine.body).toMatchObject({ requests: 2, succeeded: 2, input_tokens: 15 });
  });

  it("writes the reason and the count into the CSV", async () => {
    const res = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/requests.csv?status=refused`).expect(200);
    const [header, ...lines] = (res.text as string).trim().split("\r\n");
    const cols = header!.split(",");
    const rows = lines.map((l) => Object.fromEntries(l.split(",").map((v, i) => [cols[i], v])));
    expect(rows.map((r) => [r.outcome, r.error_code, r.count]).sort()).toEqual([
      ["refused", "daily_budget_exceeded", "4"],
      ["refused", "model_not_found", "1"],
    ]);
  });
});

/** Waits until the roll-up pass has taken every entry written so far (it runs every 200 ms here). */
async function waitForRollup(): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const rows = await h.db.$queryRaw<{ left: number }[]>`
      SELECT count(*)::int AS left FROM request_log WHERE NOT refused AND xid >= (SELECT coalesce(max(next_xid), 0) FROM request_log_rollup)`;
    if (rows[0]!.left === 0) return;
    if (Date.now() > deadline) throw new Error("the roll-up never caught up");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("analytics", () => {
  it("counts requests, tokens, spend and errors per hour and per day, by key and by model, the same before and after the roll-up", async () => {
    const a = await seedAccount(h, { credit: 100_000_000 });
    const second = await h
      .call(
        "POST",
        "/admin/v1/keys",
        { kind: "admin" },
        { user_id: a.userId, organization_id: a.organizationId, scopes: ["text"], daily_budget_microrub: 1_000_000_000, name: "second" },
      )
      .expect(201);
    const b: Account = { ...a, keyId: second.body.id, key: second.body.key };
    await paid(a, { settle: 10_000 }, { model: "model-a", usage: { input_tokens: 100, output_tokens: 10 } });
    await paid(a, { settle: 15_000 }, { model: "model-b", usage: { input_tokens: 50, output_tokens: 5 } });
    await paid(b, { release: { code: "upstream_error", message: "upstream failed" } }, { model: "model-a" });
    await sendRefusals([refusal(b, { model: "model-a", count: 3 })]).expect(200);

    const base = `/admin/v1/organizations/${a.organizationId}/analytics`;
    const read = async (q: string) => (await h.call("GET", `${base}?${q}`).expect(200)).body as AnalyticsReport;
    const byModel = await read("granularity=hour&group_by=model");
    expect(byModel.buckets).toHaveLength(24);
    const hourNow = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000).toISOString().replace(".000Z", "Z");
    const i = byModel.buckets.indexOf(hourNow);
    expect(i).toBeGreaterThanOrEqual(0);
    const modelA = byModel.groups.find((g) => g.model === "model-a")!;
    expect(modelA.points[i]).toEqual({
      requests: 5,
      succeeded: 1,
      failed: 1,
      refused: 3,
      input_tokens: 100,
      output_tokens: 10,
      units: 0,
      cost_microrub: 10_000,
    });
    expect(byModel.totals).toMatchObject({ requests: 6, succeeded: 2, failed: 1, refused: 3, input_tokens: 150, cost_microrub: 25_000 });

    const byKey = await read("group_by=key");
    expect(byKey.buckets).toHaveLength(30);
    expect(byKey.groups.map((g) => [g.key!.id, g.totals.requests, g.totals.cost_microrub])).toEqual([
      [a.keyId, 2, 25_000],
      [b.keyId, 4, 0],
    ]);
    expect(byKey.groups[1]!.key!.name).toBe("second");
    await waitForRollup();
    expect(await read("group_by=key")).toEqual(byKey);
    expect(await read("granularity=hour&group_by=model")).toEqual(byModel);
    expect((await read("model_prefix=model-b")).totals).toMatchObject({ requests: 1, cost_microrub: 15_000 });

    const csv = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/analytics.csv?group_by=model&granularity=hour`).expect(200);
    expect(csv.headers["content-type"]).toMatch(/^text\/csv/);
    const lines = (csv.text as string).trim().split("\r\n");
    expect(lines[0]).toBe("bucket,key_id,key_name,model,requests,succeeded,failed,refused,input_tokens,output_tokens,units,cost_microrub");
    expect(lines).toContain(`${hourNow},,,model-a,5,1,1,3,100,10,0,10000`);
    expect(lines).toHaveLength(1 + 24 * byModel.groups.length);

    await h.call("GET", `${base}?granularity=hour&from=2026-01-01&to=2026-01-09`).expect(400);
    await h.call("GET", `${base}?from=2026-02-01&to=2026-01-01`).expect(400);
    await h.call("GET", `/admin/v1/organizations/${randomUUID()}/analytics`).expect(404);
  });
});

describe("a key's activity and its next request", () => {
  it("shows the last use, requests today and over 7 days, the daily trend, and marks a key that cannot afford its next request", async () => {
    const a = await seedAccount(h, { credit: 100_000_000, dailyBudget: 60_000 });
    // Two requests estimated at 52,000 each, charged 5,000 each: 10,000 spent, 50,000 left of 60,000.
    await paid(a, { settle: 5_000 }, { estimated_cost_microrub: 52_000 });
    await paid(a, { settle: 5_000 }, { estimated_cost_microrub: 52_000 });
    await sendRefusals([refusal(a, { count: 7 })]).expect(200);

    const key = await h.call("GET", `/admin/v1/keys/${a.keyId}`).expect(200);
    expect(key.body.activity).toMatchObject({ requests_today: 9, requests_7d: 9, errors_7d: 7 });
    expect(key.body.activity.daily).toHaveLength(7);
    expect(key.body.activity.daily.at(-1)).toMatchObject({ requests: 9, errors: 7, cost_microrub: 10_000 });
    expect(Date.now() - Date.parse(key.body.activity.last_used_at)).toBeLessThan(60_000);
    expect(key.body.next_request).toEqual({ estimated_cost_microrub: 52_000, room_microrub: 50_000, fits: false });

    const listed = await h.call("GET", "/cabinet/v1/keys", memberOf(a)).expect(200);
    expect(listed.body.data[0]).toMatchObject({ id: a.keyId, next_request: { fits: false }, activity: { requests_today: 9 } });

    // A key that never ran a request has no next request to judge, and no activity.
    const idle = await seedAccount(h, { credit: 1_000 });
    const fresh = await h.call("GET", `/admin/v1/keys/${idle.keyId}`).expect(200);
    expect(fresh.body).toMatchObject({ next_request: null, activity: { last_used_at: null, requests_7d: 0 } });
  });
});
