import { randomUUID } from "node:crypto";
import { FAKE_MODEL, startSystemUnderTest, type SystemUnderTest } from "@meter/testing";

/**
 * SIGKILL the text service with requests in flight, start it again, and show that every hold is
 * resolved exactly once, that no client's retry is charged twice, and that the books balance.
 * Per-request holds here (ALLOWANCES=off), so each in-flight request's hold is visible in billing;
 * e2e/allowances.test.ts kills text with requests on allowances.
 */
let sut: SystemUnderTest;
beforeAll(async () => {
  sut = await startSystemUnderTest({ env: { ALLOWANCES: "off" } });
}, 120_000);
afterAll(async () => {
  await sut.close();
});

it("after a SIGKILL mid-flight every hold is settled or released once and every retry gets its answer", async () => {
  const account = await sut.account({ credit: 1_000_000_000 });
  // Long enough that no request is answered before every hold is placed, even on a busy machine.
  sut.fake.configure({ delayMs: 5_000 });
  const requests = Array.from({ length: 12 }, (_, i) => ({
    key: randomUUID(),
    body: { model: FAKE_MODEL, max_tokens: 40, messages: [{ role: "user", content: `request ${i}` }] },
  }));
  const send = (r: (typeof requests)[number]) =>
    fetch(`${sut.url}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json", "idempotency-key": r.key },
      body: JSON.stringify(r.body),
    }).then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> }));

  const inFlight = requests.map(send);
  // Killed once every request holds money and waits for its upstream (a fixed delay raced the holds
  // when other suites loaded the machine).
  const holdsBy = Date.now() + 4_000;
  while ((await sut.admin<{ data: unknown[] }>("GET", "/admin/v1/holds?status=active&source=text")).data.length < requests.length && Date.now() < holdsBy) {
    await new Promise((r) => setTimeout(r, 50));
  }
  await sut.system.kill("text", "SIGKILL");
  const firstAnswers = await Promise.all(inFlight);
  // The service died with money possibly held: the gateway must not call that a failure.
  for (const a of firstAnswers) expect([202]).toContain(a.status);

  const held = await sut.admin<{ data: unknown[] }>("GET", "/admin/v1/holds?status=active&source=text");
  expect(held.data.length).toBe(requests.length);

  sut.fake.configure({ delayMs: 0 });
  await sut.system.start("text");

  // The new process takes the dead one's requests over and finishes them.
  const deadline = Date.now() + 60_000;
  for (;;) {
    const active = await sut.admin<{ data: unknown[] }>("GET", "/admin/v1/holds?status=active&source=text");
    if (active.data.length === 0) break;
    if (Date.now() > deadline) throw new Error(`${active.data.length} holds still active`);
    await new Promise((r) => setTimeout(r, 250));
  }

  const balanceBefore = await sut.admin<{ balance_microrub: number }>("GET", `/admin/v1/organizations/${account.organizationId}/balance`);
  const retries = await Promise.all(requests.map(send));
  let charged = 0;
  for (const r of retries) {
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ type: "message", billing: { status: "settled" } });
    charged += (r.body.billing as { cost_microrub: number }).cost_microrub;
  }
  // Retries replay: they charge nothing more.
  const balanceAfter = await sut.admin<{ balance_microrub: number; reserved_microrub: number }>(
    "GET",
    `/admin/v1/organizations/${account.organizationId}/balance`,
  );
  expect(balanceAfter).toMatchObject({ balance_microrub: balanceBefore.balance_microrub, reserved_microrub: 0 });
  expect(balanceAfter.balance_microrub).toBe(1_000_000_000 - charged);
  await sut.assertBooksBalance();
}, 120_000);
