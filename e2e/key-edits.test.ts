import { randomUUID } from "node:crypto";
import { LOCAL_MODEL, startSystemUnderTest, type SystemUnderTest, queryRows } from "@meter/testing";

/**
 * Changing a key (docs/api.md, "Changing a key"): a strict PATCH, a lowered budget that holds from the
 * answer on even while a burst is served from allowances, and an expiry that refuses the key like a
 * revocation, on every path the gateway has (its key cache included).
 */

interface Answer {
  status: number;
  body: Record<string, unknown>;
  retryAfter: string | null;
}

const message = (content: string, maxTokens = 64) => ({ model: LOCAL_MODEL, max_tokens: maxTokens, messages: [{ role: "user", content }] });

async function call(url: string, token: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "idempotency-key": randomUUID() },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, retryAfter: res.headers.get("retry-after") };
}

async function until<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

let sut: SystemUnderTest;
const patchKey = (id: string, body: unknown) => call(sut.url, sut.adminToken, "PATCH", `/admin/v1/keys/${id}`, body);
const send = (key: string, payload: unknown) => call(sut.url, key, "POST", "/v1/messages", payload);

beforeAll(async () => {
  sut = await startSystemUnderTest({
    env: {
      // Large allowances (a minute of the key's spend) that stay open: without a call-back they would
      // serve far more than a lowered budget leaves.
      ALLOWANCE_SECONDS: "60",
      ALLOWANCE_MIN_REQUESTS: "64",
      // Idle for longer than the slow requests take: only a call-back closes them in time.
      ALLOWANCE_IDLE_MS: "20000",
      ALLOWANCE_RETRY_AFTER_S: "1",
      KEY_EXPIRY_SWEEP_INTERVAL_MS: "200",
    },
  });
}, 240_000);
afterAll(async () => {
  await sut?.close();
}, 60_000);

describe("PATCH /admin/v1/keys/{key_id}", () => {
  it("refuses what it does not take with a code, and changes nothing", async () => {
    const account = await sut.account();
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const refused: [unknown, number, string][] = [
      [{}, 400, "invalid_request"],
      [{ scopes: ["text"] }, 400, "unknown_field"],
      [{ daily_budget_microrub: "100" }, 400, "invalid_request"],
      [{ daily_budget_microrub: -1 }, 400, "invalid_request"],
      [{ daily_budget_microrub: 1.5 }, 400, "invalid_request"],
      [{ name: "" }, 400, "invalid_request"],
      [{ name: 7 }, 400, "invalid_request"],
      [{ expires_at: "tomorrow" }, 400, "invalid_request"],
      [{ expires_at: new Date(Date.now() - 1000).toISOString() }, 400, "invalid_request"],
      // Past the year 9999 once its offset applies: PostgreSQL cannot store it (it was a 500).
      [{ expires_at: "9999-12-31T23:59:59-23:59" }, 400, "invalid_request"],
      // PostgreSQL text holds no NUL character (it was a 500).
      [{ name: "a\u0000b" }, 400, "invalid_request"],
      [{ budget_alert_percents: [0] }, 400, "invalid_request"],
      [{ budget_alert_percents: [101] }, 400, "invalid_request"],
      [{ budget_alert_percents: [50, 50] }, 400, "invalid_request"],
      [{ budget_alert_percents: [10.5] }, 400, "invalid_request"],
      [{ budget_alert_percents: Array.from({ length: 11 }, (_, i) => i + 1) }, 400, "invalid_request"],
      [{ budget_alert_percents: "50" }, 400, "invalid_request"],
    ];
    for (const [body, status, code] of refused) {
      const answer = await patchKey(account.keyId, body);
      expect({ body, status: answer.status, code: (answer.body.error as { code: string }).code }).toEqual({ body, status, code });
    }
    const unchanged = await sut.admin<Record<string, unknown>>("GET", `/admin/v1/keys/${account.keyId}`);
    expect(unchanged).toMatchObject({ daily_budget_microrub: 1_000_000_000, expires_at: null, budget_alert_percents: [] });

    expect((await patchKey(randomUUID(), { name: "x" })).status).toBe(404);
    expect((await patchKey("not-a-uuid", { name: "x" })).status).toBe(400);

    const changed = await patchKey(account.keyId, {
      name: "  ci runner  ",
      daily_budget_microrub: 5_000,
      expires_at: future,
      budget_alert_percents: [80, 50, 100],
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ name: "ci runner", daily_budget_microrub: 5_000, budget_alert_percents: [50, 80, 100], status: "active" });
    expect(Date.parse(changed.body.expires_at as string)).toBe(Date.parse(future));
    // Null takes the expiry away; the other fields stay as they were.
    expect((await patchKey(account.keyId, { expires_at: null })).body).toMatchObject({ expires_at: null, name: "ci runner", daily_budget_microrub: 5_000 });

    // The rename shows in the key list.
    const list = await sut.admin<{ data: { id: string; name: string }[] }>("GET", `/admin/v1/keys?organization_id=${account.organizationId}`);
    expect(list.data.find((k) => k.id === account.keyId)?.name).toBe("ci runner");

    await sut.admin("POST", `/admin/v1/keys/${account.keyId}/revoke`);
    const afterRevoke = await patchKey(account.keyId, { name: "again" });
    expect(afterRevoke.status).toBe(409);
    expect(afterRevoke.body.error).toMatchObject({ code: "conflict" });
  }, 60_000);

  it("sets an organization's low balance threshold", async () => {
    const account = await sut.account();
    const set = await call(sut.url, sut.adminToken, "PATCH", `/admin/v1/organizations/${account.organizationId}`, { low_balance_microrub: 250_000 });
    expect(set).toMatchObject({ status: 200, body: { id: account.organizationId, low_balance_microrub: 250_000 } });
    const bad = await call(sut.url, sut.adminToken, "PATCH", `/admin/v1/organizations/${account.organizationId}`, { low_balance_microrub: -5 });
    expect(bad.status).toBe(400);
    expect((await call(sut.url, sut.adminToken, "PATCH", `/admin/v1/organizations/${randomUUID()}`, { low_balance_microrub: null })).status).toBe(404);
    expect(await sut.admin("GET", `/admin/v1/organizations/${account.organizationId}`)).toMatchObject({ low_balance_microrub: 250_000 });
  });
});

describe("an expired key", () => {
  it("is refused like a revoked one from its expires_at on, though the gateway had it cached; its allowances are called back", async () => {
    const account = await sut.account();
    const revoked = await sut.account();
    await sut.admin("POST", `/admin/v1/keys/${revoked.keyId}/revoke`);
    const expiresAt = Date.now() + 8_000;
    expect((await patchKey(account.keyId, { expires_at: new Date(expiresAt).toISOString() })).status).toBe(200);
    // Served until its expiry (text may hold an allowance of it by then).
    const answers = await Promise.all(Array.from({ length: 24 }, () => send(account.key, message("before the expiry"))));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    // Verified again 1.5 s before its expiry: a gateway would trust that answer for KEY_CACHE_TTL_MS (4 s).
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - 1_500 - Date.now())));
    expect((await send(account.key, message("just before the expiry"))).status).toBe(200);
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now() + 50)));

    const refused = await send(account.key, message("after the expiry"));
    const revokedAnswer = await send(revoked.key, message("a revoked key"));
    const shape = (a: Answer) => ({ status: a.status, ...a.body, error: { ...(a.body.error as object), request_id: "(each its own)" } });
    expect(refused.status).toBe(401);
    expect(shape(refused)).toEqual(shape(revokedAnswer));

    // The sweep closes it: shown expired, and no allowance of it stays open in billing.
    await until(
      "the key shown expired",
      () => sut.admin<{ status: string }>("GET", `/admin/v1/keys/${account.keyId}`),
      (k) => k.status === "expired",
    );
    await until(
      "the expired key's allowances returned",
      () =>
        queryRows<{ n: string }>(sut.env.BILLING_LEDGER_DATABASE_URL!, "SELECT count(*) AS n FROM holds WHERE key_id = $1 AND status = 'active'", [
          account.keyId,
        ]),
      (rows) => Number(rows[0]!.n) === 0,
      8_000,
    );
    expect((await patchKey(account.keyId, { expires_at: null })).status).toBe(409);
    await sut.assertBooksBalance();
  }, 60_000);
});

describe("a budget lowered during a burst", () => {
  it("holds from the answer on: 64 concurrent clients served from open allowances never take the day's spending past it", async () => {
    const account = await sut.account({ dailyBudget: 1_000_000_000 });
    const fast = message("[[sleep:20]] the burst");
    const slow = message("[[sleep:4000]] in flight while the budget is lowered");
    const estimateOf = async (payload: unknown) => (await call(sut.url, account.key, "POST", "/v1/chat/quote", payload)).body.estimated_cost_microrub as number;
    const fastEstimate = await estimateOf(fast);
    const slowEstimate = await estimateOf(slow);
    const costOf = (a: Answer) => (a.body.billing as { cost_microrub: number }).cost_microrub;
    const served = (answers: Answer[]) => answers.filter((a) => a.status === 200);
    const sum = (answers: Answer[]) => answers.reduce((s, a) => s + costOf(a), 0);
    // Requests a client sends after the answer at most: without the call-back the open allowances serve
    // every one of them, and they cost more than the new budget leaves (checked below).
    const perClientAfter = 16;
    const roomOf = async () => {
      const rows = await queryRows<{ id: string; room: string; used: string }>(
        sut.env.TEXT_DATABASE_URL!,
        "SELECT id, granted - used AS room, used FROM allowances WHERE key_id = $1 AND state = 'open'",
        [account.keyId],
      );
      return { ids: rows.map((r) => r.id), room: rows.reduce((s, r) => s + Number(r.room), 0) };
    };

    // Each client: fast requests until told, then one slow one (in flight while the budget is lowered),
    // then fast ones once the change is answered, until the budget refuses it for good (a refusal with
    // Retry-After is money on its way back: tried again) or it was served perClientAfter of them.
    let slowNow = false;
    let inSlow = 0;
    let answerReceived!: () => void;
    const changeAnswered = new Promise<void>((r) => (answerReceived = r));
    const before: Answer[] = [];
    const slowAnswers: Answer[] = [];
    const after: Answer[] = [];
    const client = async () => {
      while (!slowNow) before.push(await send(account.key, fast));
      inSlow++;
      const inFlight = send(account.key, slow);
      await changeAnswered;
      slowAnswers.push(await inFlight);
      for (let n = 0, refusals = 0; n < perClientAfter && refusals < 5;) {
        const a = await send(account.key, fast);
        after.push(a);
        if (a.status === 200) {
          n++;
          continue;
        }
        expect(a.status).toBe(429);
        if (a.retryAfter === null) return;
        refusals++;
        await new Promise((r) => setTimeout(r, Number(a.retryAfter) * 1000));
      }
    };
    const burst = Promise.all(Array.from({ length: 64 }, client));
    // Warmed up until text holds allowances with room for the slow requests and every later one.
    const started = Date.now();
    await until(
      "room in text's open allowances of the key for the burst",
      async () => ({ room: (await roomOf()).room, ms: Date.now() - started }),
      (v) => v.ms >= 2_000 && v.room >= 64 * slowEstimate + 64 * perClientAfter * fastEstimate,
      30_000,
    );
    slowNow = true;
    await until(
      "every client in its slow request",
      () => Promise.resolve(inSlow),
      (n) => n === 64,
      30_000,
    );
    // ...and every slow request admitted (its hold placed): they are the requests under way at the change.
    await until(
      "every slow request admitted",
      async () =>
        Number(
          (
            await queryRows<{ n: string }>(sut.env.TEXT_DATABASE_URL!, "SELECT count(*) AS n FROM text_requests WHERE key_id = $1 AND state = 'reserving'", [
              account.keyId,
            ])
          )[0]!.n,
        ),
      (n) => n === 64,
      30_000,
    );
    expect(served(before).length).toBe(before.length);

    // Admitted before the answer: the warm-up (answered, its cost known) and the 64 slow requests.
    const warmUp = sum(before);
    const newBudget = warmUp + 64 * slowEstimate + 8 * fastEstimate;
    const open = await roomOf();
    const patched = await patchKey(account.keyId, { daily_budget_microrub: newBudget });
    answerReceived();
    expect(patched.status).toBe(200);
    const usedAtAnswer = await queryRows<{ id: string; used: string }>(
      sut.env.TEXT_DATABASE_URL!,
      "SELECT id, used FROM allowances WHERE id = ANY($1::uuid[])",
      [open.ids],
    );
    // The test can fail: the allowances open at the change hold room for every request sent after it,
    // and those would cost more than the new budget leaves.
    expect(open.room).toBeGreaterThanOrEqual(64 * perClientAfter * fastEstimate);
    expect(64 * perClientAfter * costOf(before[0]!)).toBeGreaterThan(newBudget - warmUp);

    await burst;
    await until(
      "every hold resolved",
      () => sut.admin<{ data: unknown[] }>("GET", "/admin/v1/holds?status=active"),
      (h) => h.data.length === 0,
      60_000,
    );
    const charged = sum(served([...before, ...slowAnswers, ...after]));
    const usage = await sut.admin<{ spent_microrub: number; reserved_microrub: number }>("GET", `/admin/v1/keys/${account.keyId}/usage`);
    expect(usage).toEqual(expect.objectContaining({ spent_microrub: charged, reserved_microrub: 0 }));
    // The requests sent after the answer were charged within what the new budget left them.
    expect(usage.spent_microrub).toBeLessThanOrEqual(newBudget);
    expect(served(slowAnswers).length).toBe(64);
    expect(sum(served(after))).toBeLessThanOrEqual(newBudget - warmUp - sum(slowAnswers));
    // From the answer on no request was placed on the allowances open at the change: they were called back.
    const usedAtEnd = await queryRows<{ id: string; used: string }>(sut.env.TEXT_DATABASE_URL!, "SELECT id, used FROM allowances WHERE id = ANY($1::uuid[])", [
      open.ids,
    ]);
    const byId = (rows: { id: string; used: string }[]) => Object.fromEntries(rows.map((r) => [r.id, Number(r.used)]));
    expect(byId(usedAtEnd)).toEqual(byId(usedAtAnswer));
    // The requests after the answer were served up to the new budget, not refused wholesale.
    expect(served(after).length).toBeGreaterThan(64);
    const balance = await sut.admin<{ balance_microrub: number; reserved_microrub: number }>(
      "GET",
      `/admin/v1/organizations/${account.organizationId}/balance`,
    );
    expect(balance).toMatchObject({ balance_microrub: 1_000_000_000 - charged, reserved_microrub: 0 });
    await sut.assertBooksBalance();
  }, 180_000);
});
