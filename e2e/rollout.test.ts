import { randomUUID } from "node:crypto";
import { LOCAL_MODEL, startSystemUnderTest, type SystemUnderTest } from "@meter/testing";

/**
 * A rolling restart under load: two replicas of text behind the gateway (which takes the text
 * service's URLs in turn, as a Service spreads connections over pods), each stopped as Kubernetes
 * stops a pod (SIGTERM: not ready at once, still serving with `Connection: close` for
 * SHUTDOWN_DELAY_MS, then no new connections while the requests in flight finish) and started again,
 * one after the other, while clients keep sending paid requests. Every client gets its 200, and the
 * books are exact: the organization is charged what the answers say, once.
 */
let sut: SystemUnderTest;
beforeAll(async () => {
  sut = await startSystemUnderTest({
    replicas: { text: 2 },
    // Longer than the gateway's idle-socket timeout (PROXY_IDLE_SOCKET_MS), as in the deployments.
    // Nothing here dies, so nothing needs taking over: a heartbeat that a busy machine (CI runs two suites
    // at once) delays past the usual 2 s must not make a live replica's requests look abandoned.
    env: { SHUTDOWN_DELAY_MS: "2500", WORKER_STALE_MS: "10000" },
  });
}, 120_000);
afterAll(async () => {
  await sut?.close();
});

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

it("restarts each text replica under load: no client error, every answer charged once", async () => {
  const credit = 1_000_000_000;
  const account = await sut.account({ credit, dailyBudget: credit });
  const answers: Answer[] = [];
  let sending = true;
  const client = async (n: number): Promise<void> => {
    for (let i = 0; sending; i++) {
      const res = await fetch(`${sut.url}/v1/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json", "idempotency-key": randomUUID() },
        // The local model sleeps when asked: requests are in flight whenever a replica is stopped.
        body: JSON.stringify({ model: LOCAL_MODEL, max_tokens: 50, messages: [{ role: "user", content: `[[sleep:150]] client ${n} request ${i}` }] }),
      });
      answers.push({ status: res.status, body: (await res.json()) as Record<string, unknown> });
    }
  };
  const clients = Array.from({ length: 8 }, (_, n) => client(n));

  await new Promise((r) => setTimeout(r, 500));
  await sut.system.restart("text");
  await sut.system.restart("text-2");
  await new Promise((r) => setTimeout(r, 500));
  sending = false;
  await Promise.all(clients);

  const failures = answers.filter((a) => a.status !== 200);
  expect(failures).toEqual([]);
  // Enough traffic crossed both restarts to mean something (each takes a few seconds).
  expect(answers.length).toBeGreaterThan(100);

  const charged = answers.reduce((sum, a) => sum + (a.body.billing as { cost_microrub: number }).cost_microrub, 0);
  const balance = await sut.settledBalance(account.organizationId, 30_000);
  expect(balance).toMatchObject({ balance_microrub: credit - charged, reserved_microrub: 0 });
  const books = sut.booksCheck();
  expect(books.output).toMatch(/OK: the books balance/);
  expect(books.ok).toBe(true);
}, 180_000);
