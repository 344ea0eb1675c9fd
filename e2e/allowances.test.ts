import { randomUUID } from "node:crypto";
import { FAKE_MODEL, LOCAL_MODEL, startSystemUnderTest, type SystemUnderTest, type TestAccount, queryRows } from "@meter/testing";

/**
 * Allowances (docs/api.md, "Allowances"): the text service holds each request in its own commit,
 * against money billing-ledger reserved for it ahead. Whatever the interleaving of grants, local
 * holds, closings and kills, no budget or balance is overrun by one microrub, the last requests of a
 * budget are admitted exactly, every allowance ends closed with its remainder returned, and the books
 * balance.
 */

/** Allowances close after 300 ms without a request here, so a round's money is back within a second (Retry-After: 1). */
const ALLOWANCE_ENV = { ALLOWANCE_IDLE_MS: "300", ALLOWANCE_RETRY_AFTER_S: "1", TEXT_PARK_BASE_MS: "200", TEXT_RECORD_LEASE_MS: "2000" };

interface Answer {
  status: number;
  body: Record<string, unknown>;
  retryAfter: string | null;
}

const body = (content: string, maxTokens = 64, model = LOCAL_MODEL) => ({ model, max_tokens: maxTokens, messages: [{ role: "user", content }] });

function sender(sut: SystemUnderTest) {
  return (key: string, idempotencyKey: string, payload: unknown): Promise<Answer> =>
    fetch(`${sut.url}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "idempotency-key": idempotencyKey },
      body: JSON.stringify(payload),
    }).then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown>, retryAfter: res.headers.get("retry-after") }));
}

/** Sends until the answer is final: a refusal with Retry-After is sent again after it (at most 5 times). */
async function untilFinal(send: ReturnType<typeof sender>, key: string, idempotencyKey: string, payload: unknown): Promise<Answer> {
  for (let attempt = 0; ; attempt++) {
    const answer = await send(key, idempotencyKey, payload);
    if (answer.status === 200 || answer.retryAfter === null || attempt === 5) return answer;
    await new Promise((r) => setTimeout(r, Number(answer.retryAfter) * 1000));
  }
}

/** What one request of `payload` holds: the quote is the estimate its hold is placed for. */
async function estimateOf(sut: SystemUnderTest, key: string, payload: unknown): Promise<number> {
  const res = await fetch(`${sut.url}/v1/chat/quote`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(payload),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { estimated_cost_microrub: number }).estimated_cost_microrub;
}

async function untilNoActiveHolds(sut: SystemUnderTest, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const active = await sut.admin<{ data: unknown[] }>("GET", "/admin/v1/holds?status=active");
    if (active.data.length === 0) return;
    if (Date.now() > deadline) throw new Error(`${active.data.length} holds still active: ${JSON.stringify(active.data).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Each answered request is charged what it says, once; nothing else; nothing stays reserved. */
async function expectChargedExactly(sut: SystemUnderTest, account: TestAccount, credit: number, answers: readonly Answer[]): Promise<void> {
  const charged = answers.filter((a) => a.status === 200).reduce((sum, a) => sum + (a.body.billing as { cost_microrub: number }).cost_microrub, 0);
  const balance = await sut.admin<{ balance_microrub: number; reserved_microrub: number }>("GET", `/admin/v1/organizations/${account.organizationId}/balance`);
  expect(balance).toMatchObject({ balance_microrub: credit - charged, reserved_microrub: 0 });
  const usage = await sut.admin<{ spent_microrub: number; reserved_microrub: number }>("GET", `/admin/v1/keys/${account.keyId}/usage`);
  expect(usage).toMatchObject({ spent_microrub: charged, reserved_microrub: 0 });
}

/** How many requests billing recorded as placed on an allowance, and how many allowances it granted. */
async function allowanceUse(sut: SystemUnderTest): Promise<{ allowances: number; spends: number; active: number }> {
  const [row] = await queryRows<{ allowances: string; spends: string; active: string }>(
    sut.env.BILLING_LEDGER_DATABASE_URL!,
    `SELECT count(*) FILTER (WHERE kind = 'allowance') AS allowances,
            count(*) FILTER (WHERE allowance_id IS NOT NULL) AS spends,
            count(*) FILTER (WHERE kind = 'allowance' AND status = 'active') AS active
     FROM holds`,
  );
  return { allowances: Number(row!.allowances), spends: Number(row!.spends), active: Number(row!.active) };
}

describe("one text process", () => {
  let sut: SystemUnderTest;
  beforeAll(async () => {
    sut = await startSystemUnderTest({ env: ALLOWANCE_ENV });
  }, 120_000);
  afterAll(async () => {
    await sut?.close();
  });

  // N is large enough against the estimate for allowances to be granted early in a round, and every
  // round ends at the exact limit, where none is.
  const N = 40;
  const ROUNDS = 50;

  it.each([
    ["balance", 402],
    ["daily budget", 429],
  ] as const)(
    "64 concurrent requests against a %s worth exactly N: exactly N are answered, %i for the rest, in every round",
    async (limit, refusal) => {
      const send = sender(sut);
      // Every answer is charged exactly its hold (the upstream reports more than the hold covers), so
      // "worth exactly N" is exact: a cheaper answer would leave room for more.
      sut.fake.configure({ usage: "inflated" });
      const payload = body(`allowance round against the ${limit}`, 64, FAKE_MODEL);
      const probe = await sut.account();
      const estimate = await estimateOf(sut, probe.key, payload);
      const before = await allowanceUse(sut);
      for (let round = 0; round < ROUNDS; round++) {
        const credit = limit === "balance" ? N * estimate : 1_000_000_000;
        const account = await sut.account({ credit, dailyBudget: limit === "balance" ? 1_000_000_000 : N * estimate });
        // A refusal with Retry-After is not final (money parked in an allowance was being returned): the
        // client tries again after it, with its key, as docs/api.md tells it to.
        const answers = await Promise.all(Array.from({ length: 64 }, () => untilFinal(send, account.key, randomUUID(), payload)));
        const statuses = answers.map((a) => a.status);
        expect({ round, answered: statuses.filter((s) => s === 200).length }).toEqual({ round, answered: N });
        expect(statuses.filter((s) => s !== 200).every((s) => s === refusal)).toBe(true);
        await untilNoActiveHolds(sut);
        await expectChargedExactly(sut, account, credit, answers);
      }
      sut.fake.configure({});
      const after = await allowanceUse(sut);
      // The rounds were served from allowances, not only per request.
      expect(after.allowances).toBeGreaterThan(before.allowances);
      expect(after.spends).toBeGreaterThan(before.spends);
      expect(after.active).toBe(0);
      await sut.assertBooksBalance();
    },
    600_000,
  );
});

describe("money parked in an allowance", () => {
  let sut: SystemUnderTest;
  beforeAll(async () => {
    // Idle long enough for the test to size its large request while the allowance is still open, even
    // on a loaded machine; Retry-After past that idle time.
    sut = await startSystemUnderTest({ env: { ...ALLOWANCE_ENV, ALLOWANCE_IDLE_MS: "10000", ALLOWANCE_RETRY_AFTER_S: "12" } });
  }, 120_000);
  afterAll(async () => {
    await sut?.close();
  });

  it("a refusal that money parked in an allowance caused says Retry-After, and succeeds when retried after it", async () => {
    const send = sender(sut);
    const small = body("small requests keep an allowance open", 16);
    const probe = await sut.account();
    const smallEstimate = await estimateOf(sut, probe.key, small);
    const credit = 200 * smallEstimate;
    const account = await sut.account({ credit });
    // Small requests, one after the other: the first goes per request and starts a grant; the others
    // are placed on the allowance once it is there.
    const answers: Answer[] = [];
    // (On a loaded machine the grant may take a moment: a few more small requests until it is there.)
    let outstanding = 0;
    for (let i = 0; i < 40 && (i < 8 || outstanding === 0); i++) {
      answers.push(await send(account.key, randomUUID(), small));
      const [parked] = await queryRows<{ outstanding: string }>(
        sut.env.BILLING_LEDGER_DATABASE_URL!,
        "SELECT COALESCE(sum(amount - consumed), 0) AS outstanding FROM holds WHERE kind = 'allowance' AND status = 'active' AND key_id = $1",
        [account.keyId],
      );
      outstanding = Number(parked!.outstanding);
    }
    expect(answers.every((a) => a.status === 200)).toBe(true);
    // Every answer's settlement applied in billing (each moves its estimate out of the allowance), so
    // what the allowance still parks is what it will park until it is returned.
    for (const deadline = Date.now() + 30_000; ;) {
      const [row] = await queryRows<{ settled: string; outstanding: string }>(
        sut.env.BILLING_LEDGER_DATABASE_URL!,
        `SELECT count(*) FILTER (WHERE kind = 'request' AND status = 'settled') AS settled,
                COALESCE(sum(amount - consumed) FILTER (WHERE kind = 'allowance' AND status = 'active'), 0) AS outstanding
         FROM holds WHERE key_id = $1`,
        [account.keyId],
      );
      outstanding = Number(row!.outstanding);
      if (Number(row!.settled) === answers.length) break;
      if (Date.now() > deadline) throw new Error(`${row!.settled} of ${answers.length} settlements applied`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(outstanding).toBeGreaterThan(0);

    // A request larger than what is free beside the allowance, but within the balance.
    const charged = answers.reduce((sum, a) => sum + (a.body.billing as { cost_microrub: number }).cost_microrub, 0);
    const free = credit - charged - outstanding;
    // The smallest max_tokens whose estimate is more than is free (the estimate grows with it).
    const big = (maxTokens: number) => body("a request larger than what the allowance leaves free", maxTokens);
    let [lo, hi] = [16, 16];
    while ((await estimateOf(sut, account.key, big(hi))) <= free) [lo, hi] = [hi, hi * 2];
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if ((await estimateOf(sut, account.key, big(mid))) <= free) lo = mid;
      else hi = mid;
    }
    const bigEstimate = await estimateOf(sut, account.key, big(hi));
    expect(bigEstimate).toBeLessThanOrEqual(credit - charged);

    const bigKey = randomUUID();
    const refused = await send(account.key, bigKey, big(hi));
    expect(refused.status).toBe(402);
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, Number(refused.retryAfter) * 1000));
    const retried = await send(account.key, bigKey, big(hi));
    expect(retried.status).toBe(200);
    await untilNoActiveHolds(sut);
    await expectChargedExactly(sut, account, credit, [...answers, retried]);
    await sut.assertBooksBalance();
  }, 120_000);
});

describe("two text processes", () => {
  let sut: SystemUnderTest;
  beforeAll(async () => {
    sut = await startSystemUnderTest({ env: { ...ALLOWANCE_ENV, WORKER_STALE_MS: "10000" }, replicas: { text: 2 } });
  }, 120_000);
  afterAll(async () => {
    await sut?.close();
  });

  it("share one hot key: both serve from allowances, and the key never spends more than its budget", async () => {
    const send = sender(sut);
    // Each answer is charged exactly its hold, so the budget is worth exactly N requests.
    sut.fake.configure({ usage: "inflated" });
    const payload = body("one hot key, two text processes", 64, FAKE_MODEL);
    const probe = await sut.account();
    const estimate = await estimateOf(sut, probe.key, payload);
    const N = 300;
    const account = await sut.account({ dailyBudget: N * estimate });
    const answers: Answer[] = [];
    // Waves of 32 concurrent requests until the budget refuses every one of a wave.
    for (let wave = 0; wave < 30; wave++) {
      const got = await Promise.all(Array.from({ length: 32 }, () => send(account.key, randomUUID(), payload)));
      answers.push(...got);
      for (const a of got) expect([200, 429]).toContain(a.status);
      if (got.every((a) => a.status === 429)) break;
    }
    const answered = answers.filter((a) => a.status === 200).length;
    expect(answered).toBeLessThanOrEqual(N);
    // Parked money is returned within the idle time, so the end of the budget is reached.
    expect(answered).toBeGreaterThan(N - 32);
    await untilNoActiveHolds(sut);
    await expectChargedExactly(sut, account, 1_000_000_000, answers);

    const owners = await queryRows<{ owners: string }>(
      sut.env.TEXT_DATABASE_URL!,
      "SELECT count(DISTINCT owner_id) AS owners FROM allowances WHERE key_id = $1 AND granted > 0",
      [account.keyId],
    );
    expect(Number(owners[0]!.owners)).toBe(2);
    await sut.assertBooksBalance();
  }, 300_000);
});

describe("kills", () => {
  let sut: SystemUnderTest;
  beforeAll(async () => {
    sut = await startSystemUnderTest({
      env: { ...ALLOWANCE_ENV, HOLD_AUDIT_AFTER_MS: "3000", HOLD_AUDIT_INTERVAL_MS: "500" },
    });
  }, 120_000);
  afterAll(async () => {
    await sut?.close();
  });

  it("SIGKILL of text with open allowances and of billing during grants: every request final, every allowance closed, books exact", async () => {
    const send = sender(sut);
    const credit = 1_000_000_000;
    const accounts = await Promise.all(Array.from({ length: 4 }, () => sut.account({ credit })));
    // The local model sleeps when asked, so requests are in flight on their allowances when text dies.
    const requests = Array.from({ length: 64 }, (_, i) => ({
      account: accounts[i % accounts.length]!,
      key: randomUUID(),
      payload: body(`[[sleep:400]] kill ${i}`),
    }));
    const first = requests.slice(0, 32).map((r) => send(r.account.key, r.key, r.payload));
    await new Promise((r) => setTimeout(r, 150));
    // Billing dies while the first grants are on their way; text keeps serving what it holds.
    await sut.system.kill("billing-ledger", "SIGKILL");
    const second = requests.slice(32).map((r) => send(r.account.key, r.key, r.payload));
    await new Promise((r) => setTimeout(r, 200));
    await sut.system.kill("text", "SIGKILL");
    const firstAnswers = await Promise.all([...first, ...second]);
    for (const a of firstAnswers) expect([200, 202, 402, 429, 503]).toContain(a.status);
    await sut.system.start("billing-ledger");
    await sut.system.start("text");

    // Every client retries with its key until its answer is final.
    const finals: Answer[] = [];
    for (const r of requests) {
      const deadline = Date.now() + 60_000;
      let answer = await send(r.account.key, r.key, r.payload);
      while (answer.status === 202 || answer.status === 503) {
        if (Date.now() > deadline) throw new Error(`request ${r.key} is still ${answer.status}`);
        await new Promise((res) => setTimeout(res, 250));
        answer = await send(r.account.key, r.key, r.payload);
      }
      finals.push(answer);
    }
    for (const a of finals) expect(a.status).toBe(200);

    await untilNoActiveHolds(sut);
    for (const account of accounts) {
      await expectChargedExactly(
        sut,
        account,
        credit,
        finals.filter((_, i) => requests[i]!.account === account),
      );
    }
    // Every allowance the dead process held is closed, in its database and in billing's.
    const open = await queryRows<{ n: string }>(sut.env.TEXT_DATABASE_URL!, "SELECT count(*) AS n FROM allowances WHERE state <> 'closed'");
    expect(Number(open[0]!.n)).toBe(0);
    expect((await allowanceUse(sut)).active).toBe(0);
    await sut.assertBooksBalance();
    // The owners' signed final records agree with billing's, request by request.
    const cross = await sut.admin<{ differences: unknown[] }>("POST", "/admin/v1/books/cross-check", {});
    expect(cross.differences).toEqual([]);
  }, 300_000);
});
