import { randomUUID } from "node:crypto";
import { LOCAL_MODEL, startSystemUnderTest, type SystemUnderTest } from "@meter/testing";

/**
 * The money drill: a budget race of concurrent paid requests while billing-ledger and the text service
 * (with its outbox relay) are SIGKILLed and restarted. Afterwards every request has a final answer,
 * every hold is resolved and owned, each answered request is charged exactly once, nothing else is
 * charged, and the books balance.
 */
let sut: SystemUnderTest;
beforeAll(async () => {
  sut = await startSystemUnderTest({
    env: { HOLD_AUDIT_AFTER_MS: "3000", HOLD_AUDIT_INTERVAL_MS: "500", TEXT_PARK_BASE_MS: "200", TEXT_RECORD_LEASE_MS: "2000" },
  });
}, 120_000);
afterAll(async () => {
  await sut.close();
});

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

it("kills billing and text under a budget race: every request final, every hold resolved and owned, each answer charged once", async () => {
  // Each request holds about 650 microrub: the budget admits about a third of them, so the race is real.
  const account = await sut.account({ credit: 1_000_000_000, dailyBudget: 10_000 });
  const requests = Array.from({ length: 48 }, (_, i) => ({
    key: randomUUID(),
    // The local model sleeps when asked, so requests are in flight when the kills come.
    body: { model: LOCAL_MODEL, max_tokens: 200, messages: [{ role: "user", content: `[[sleep:600]] drill ${i}` }] },
  }));
  const send = (r: (typeof requests)[number]): Promise<Answer> =>
    fetch(`${sut.url}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json", "idempotency-key": r.key },
      body: JSON.stringify(r.body),
    }).then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> }));

  const first = requests.map(send);
  await new Promise((r) => setTimeout(r, 300));
  await sut.system.kill("text", "SIGKILL");
  await sut.system.kill("billing-ledger", "SIGKILL");
  const firstAnswers = await Promise.all(first);
  // Nothing may look like a failure while money may be held: pending, or refused before any hold.
  for (const a of firstAnswers) expect([200, 202, 402, 429, 503]).toContain(a.status);
  await sut.system.start("billing-ledger");
  await sut.system.start("text");

  // Every client retries with its key until the answer is final.
  const finals: Answer[] = [];
  for (const r of requests) {
    const deadline = Date.now() + 60_000;
    let answer = await send(r);
    while (answer.status === 202 || answer.status === 503) {
      if (Date.now() > deadline) throw new Error(`request ${r.key} is still ${answer.status}`);
      await new Promise((res) => setTimeout(res, 250));
      answer = await send(r);
    }
    finals.push(answer);
  }
  for (const a of finals) expect([200, 402, 429, 502]).toContain(a.status);
  const answered = finals.filter((a) => a.status === 200);
  expect(answered.length).toBeGreaterThan(0);

  // Every hold is resolved (settled for an answer, released otherwise) within seconds, not days.
  const deadline = Date.now() + 60_000;
  for (;;) {
    const active = await sut.admin<{ data: unknown[] }>("GET", "/admin/v1/holds?status=active");
    if (active.data.length === 0) break;
    if (Date.now() > deadline) throw new Error(`${active.data.length} holds still active: ${JSON.stringify(active.data).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 250));
  }

  // Each answer is charged exactly what it says, once; nothing else is charged.
  const charged = answered.reduce((sum, a) => sum + (a.body.billing as { cost_microrub: number }).cost_microrub, 0);
  const balance = await sut.admin<{ balance_microrub: number; reserved_microrub: number }>("GET", `/admin/v1/organizations/${account.organizationId}/balance`);
  expect(balance).toMatchObject({ balance_microrub: 1_000_000_000 - charged, reserved_microrub: 0 });
  const usage = await sut.admin<{ spent_microrub: number; reserved_microrub: number }>("GET", `/admin/v1/keys/${account.keyId}/usage`);
  expect(usage).toMatchObject({ spent_microrub: charged, reserved_microrub: 0 });
  // No burst, crash or retry lets a key spend past its daily budget.
  expect(usage.spent_microrub).toBeLessThanOrEqual(10_000);

  const books = sut.booksCheck();
  expect(books.output).toMatch(/OK: the books balance/);
  expect(books.output).not.toMatch(/have no owner/);
  expect(books.ok).toBe(true);
}, 240_000);
