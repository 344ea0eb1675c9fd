import { randomUUID } from "node:crypto";
import request from "supertest";
import { createLogger } from "@meter/service-kit";
import { signedCall, testKeyEnv } from "@meter/testing";
import { compose } from "../src/composition";
import { loadConfig } from "../src/config";
import { FAKE_MODEL, LOCAL_MODEL, eventually, startTextStack, type TextStack } from "./support/text-stack";

/**
 * The money path under the failures that used to cost money: answers that could not be stored, usage
 * no hold covers, neighbours failing each other, holds left behind refusals, outages.
 */
let s: TextStack;
beforeAll(async () => {
  s = await startTextStack({ syncTimeoutMs: 3_000, parkBaseMs: 50, env: { TEXT_MAX_ATTEMPTS: "4" } });
});
afterEach(() => s.fake.reset());
afterAll(async () => {
  try {
    await eventually(async () => (await s.activeHolds()) === 0, 20_000, "every text hold resolved");
    await s.assertBooksBalance();
  } finally {
    await s.close();
  }
});

const body = (text: string, model = FAKE_MODEL, max_tokens = 40) => ({ model, max_tokens, messages: [{ role: "user", content: text }] });
const idem = () => ({ "idempotency-key": randomUUID() });

describe("an answer is stored whatever it holds", () => {
  it("U+0000 and lone surrogates in the answer: 200, replayed byte for byte, the upstream called once", async () => {
    const a = await s.account();
    const headers = idem();
    const strange = "nul:\u0000 lone:\ud800 end";
    const first = await s.call(a.key, "/v1/messages", body(strange), headers);
    expect(first.status).toBe(200);
    expect((first.json.content as { text: string }[])[0]!.text).toContain("nul:\u0000");
    const replay = await s.call(a.key, "/v1/messages", body(strange), headers);
    expect(replay.text).toBe(first.text);
    expect(s.fake.callCount()).toBe(1);
    const cost = (first.json.billing as { cost_microrub: number }).cost_microrub;
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: 1_000_000 - cost });
  });

  it("usage no hold could cover is charged at the hold: no exception, no second upstream call", async () => {
    const a = await s.account();
    s.fake.configure({ usage: "absurd" });
    const res = await s.call(a.key, "/v1/messages", body("absurd"), idem());
    expect(res.status).toBe(200);
    const billing = res.json.billing as { estimated_cost_microrub: number; cost_microrub: number };
    expect(billing.cost_microrub).toBe(billing.estimated_cost_microrub);
    expect(s.fake.callCount()).toBe(1);
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: 1_000_000 - billing.estimated_cost_microrub });
  });
});

describe("a failure after the upstream answered", () => {
  /** Makes the database refuse to complete any text request, as a broken disk or a bug would. */
  const refuseCompletions = () =>
    s.text.database.pool.query(`ALTER TABLE text_requests ADD CONSTRAINT test_no_completion CHECK (state <> 'completed') NOT VALID`);
  const allowCompletions = () => s.text.database.pool.query("ALTER TABLE text_requests DROP CONSTRAINT IF EXISTS test_no_completion");
  afterEach(allowCompletions);

  it("is an attempt with back-off; the answer is never paid for again and is stored once the database takes it", async () => {
    const a = await s.account();
    const headers = idem();
    await refuseCompletions();
    const pending = await s.call(a.key, "/v1/messages", body("kept"), headers);
    expect(pending.status).toBe(202);
    // A few attempts go by, each failing to store the answer it already has.
    await eventually(
      async () =>
        (await s.text.database.pool.query("SELECT attempts FROM text_requests WHERE idempotency_key = $1", [headers["idempotency-key"]])).rows[0]?.attempts >=
        2,
      10_000,
      "a second attempt",
    );
    await allowCompletions();
    let final = pending;
    await eventually(async () => (final = await s.call(a.key, "/v1/messages", body("kept"), headers)).status === 200, 10_000, "the answer to be stored");
    expect(s.fake.callCount()).toBe(1);
    const cost = (final.json.billing as { cost_microrub: number }).cost_microrub;
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: 1_000_000 - cost });
  });

  it("that never goes away ends within TEXT_MAX_ATTEMPTS attempts: 502, the hold released, the upstream called once", async () => {
    const a = await s.account();
    const headers = idem();
    await refuseCompletions();
    expect((await s.call(a.key, "/v1/messages", body("never stored"), headers)).status).toBe(202);
    let final;
    await eventually(async () => (final = await s.call(a.key, "/v1/messages", body("never stored"), headers)).status !== 202, 15_000, "the request to end");
    expect({ status: final!.status, code: (final!.json.error as { code: string }).code }).toEqual({ status: 502, code: "upstream_error" });
    expect(s.fake.callCount()).toBe(1);
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: 1_000_000 });
  });
});

describe("one customer cannot fail another's request", () => {
  it("requests batched with one carrying unstorable-looking input all succeed", async () => {
    const a = await s.account();
    const b = await s.account();
    const strange = s.call(b.key, "/v1/messages", body("\u0000\ud800\udfff\u0000", LOCAL_MODEL), idem());
    const others = Array.from({ length: 24 }, (_, i) => s.call(a.key, "/v1/messages", body(`neighbour ${i}`, LOCAL_MODEL), idem()));
    const results = await Promise.all([strange, ...others]);
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
  });
});

describe("no hold behind a refused request", () => {
  it("64 concurrent requests against a budget for a few, round after round: every refused request leaves nothing held", async () => {
    for (let round = 0; round < 6; round++) {
      const a = await s.account({ dailyBudget: 2_000 });
      const answers = await Promise.all(
        Array.from({ length: 64 }, (_, i) => s.call(a.key, "/v1/messages", body(`race ${round}.${i}`, LOCAL_MODEL, 100), idem())),
      );
      const statuses = answers.map((r) => r.status);
      // Anything else is listed with its error, so a failure says what came back.
      const unexpected = answers.filter((r) => ![200, 429, 402].includes(r.status)).map((r) => ({ status: r.status, error: r.json.error }));
      expect(unexpected).toEqual([]);
      const charged = answers.filter((r) => r.status === 200).reduce((sum, r) => sum + (r.json.billing as { cost_microrub: number }).cost_microrub, 0);
      // Every hold of the round is resolved within seconds: what was answered is settled, the rest released.
      const after = await s.settledBalance(a.organizationId);
      expect(after).toMatchObject({ balance_microrub: 1_000_000 - charged, reserved_microrub: 0 });
      expect(statuses.filter((st) => st === 429).length).toBeGreaterThan(0);
    }
  });
});

describe("final answers only when final", () => {
  it("a text process whose catalog is not loaded answers 503 with Retry-After, not model_not_found", async () => {
    const dark = await compose(
      loadConfig({
        ...testKeyEnv("text"),
        TEXT_DATABASE_URL: s.databaseUrl,
        RABBITMQ_URL: s.vhostUrl,
        BILLING_LEDGER_URL: "http://127.0.0.1:9",
      }),
      { logger: createLogger("text-dark", "silent") },
    );
    try {
      const identity = { kind: "key" as const, key_id: randomUUID(), user_id: randomUUID(), organization_id: randomUUID(), scopes: ["text" as const] };
      const { headers, payload } = signedCall("gateway", "text", identity, "POST", "/v1/messages", body("x"));
      const res = await request(dark.app).post("/v1/messages").set(headers).set(idem()).send(payload);
      expect({ status: res.status, code: res.body.error.code }).toEqual({ status: 503, code: "service_unavailable" });
      expect(res.headers["retry-after"]).toMatch(/^\d+$/);
    } finally {
      await dark.close();
    }
  });

  it("after a billing outage ends, a parked request becomes final within seconds", async () => {
    const patient = await startTextStack({ syncTimeoutMs: 1_000, parkBaseMs: 1_000 });
    // The 20 s outage the audit saw: exponential back-off alone then waited up to 45 s more.
    try {
      const a = await patient.account();
      const headers = idem();
      patient.fake.configure({ drop: "before-response", failTimes: 1 });
      expect((await patient.call(a.key, "/v1/messages", body("outage"), headers)).status).toBe(202);
      await patient.stopBillingHttp();
      // Its next attempts find billing gone: they park, backing off, for as long as the outage lasts.
      await new Promise((r) => setTimeout(r, 20_000));
      await patient.startBillingHttp();
      const back = Date.now();
      let final;
      await eventually(async () => (final = await patient.call(a.key, "/v1/messages", body("outage"), headers)).status !== 202, 20_000, "a final answer");
      expect(final!.status).toBe(200);
      // Billing's back-off is capped at 5 s: the next attempt comes within that (plus a reconciler pass).
      expect(Date.now() - back).toBeLessThan(7_000);
    } finally {
      await patient.close();
    }
  }, 60_000);
});

describe("the reconciler's work does not grow with history", () => {
  it("finds due requests through the partial index, with 100k finished requests in the table", async () => {
    const pool = s.text.database.pool;
    await pool.query(
      `INSERT INTO text_requests (id, key_id, user_id, organization_id, endpoint, idempotency_key, fingerprint, model, plan, estimated_cost,
         hold_id, state, attempts, completed_at)
       SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'messages', 'bulk-' || g, 'f', 'm', '{}', 1,
         gen_random_uuid(), 'completed', 1, now() - interval '1 hour'
       FROM generate_series(1, 100000) g`,
    );
    try {
      await pool.query("ANALYZE text_requests");
      const plan = (
        await pool.query<{ "QUERY PLAN": string }>(
          `EXPLAIN SELECT r.* FROM text_requests r LEFT JOIN workers w ON w.id = r.owner_id
           WHERE r.state = 'reserving' AND ((r.owner_id = $1 AND r.next_attempt_at <= now())
             OR (r.owner_id IS DISTINCT FROM $1 AND (w.id IS NULL OR w.heartbeat_at < now() - interval '15 seconds')))
           ORDER BY r.next_attempt_at LIMIT 50`,
          [s.text.workerId],
        )
      ).rows
        .map((r) => r["QUERY PLAN"])
        .join("\n");
      expect(plan).toContain("text_requests_unfinished_idx");
      expect(plan).not.toMatch(/Seq Scan on text_requests/);
    } finally {
      await pool.query("DELETE FROM text_requests WHERE idempotency_key LIKE 'bulk-%'");
    }
  });
});

describe("the hold audit", () => {
  it("tells billing which holds are still worked on, which are final, and which no request holds", async () => {
    const a = await s.account();
    const done = await s.call(a.key, "/v1/messages", body("audited", LOCAL_MODEL), idem());
    const { rows } = await s.text.database.pool.query<{ id: string; hold_id: string; cost: string }>(
      "SELECT id, hold_id, cost FROM text_requests WHERE request_id = $1",
      [done.headers.get("x-request-id")],
    );
    const record = rows[0]!;
    const stranger = randomUUID();
    const ask = {
      holds: [
        { hold_id: record.hold_id, owner_ref: record.id },
        { hold_id: stranger, owner_ref: randomUUID() },
        { hold_id: randomUUID(), owner_ref: "not-a-uuid" },
      ],
    };
    const { headers, payload } = signedCall("billing-ledger", "text", { kind: "service", service: "billing-ledger" }, "POST", "/internal/v1/hold-audit", ask);
    const res = await request(s.text.app).post("/internal/v1/hold-audit").set(headers).send(payload).expect(200);
    expect(res.body.verdicts).toEqual([
      { hold_id: record.hold_id, status: "settle", amount_microrub: Number(record.cost) },
      { hold_id: stranger, status: "absent" },
      { hold_id: ask.holds[2]!.hold_id, status: "absent" },
    ]);
    // Only billing may ask.
    const asGateway = signedCall("gateway", "text", { kind: "service", service: "gateway" }, "POST", "/internal/v1/hold-audit", ask);
    await request(s.text.app).post("/internal/v1/hold-audit").set(asGateway.headers).send(asGateway.payload).expect(403);
  });
});
