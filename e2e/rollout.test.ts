import { randomUUID } from "node:crypto";
import { LOCAL_MODEL, startSystemUnderTest, type SystemUnderTest } from "@meter/testing";

/**
 * A rolling restart under load: two replicas of text behind the gateway (which takes the text
 * service's URLs in turn, as a Service spreads connections over pods), each stopped as Kubernetes
 * stops a pod (SIGTERM: not ready at once, still serving with `Connection: close` for
 * SHUTDOWN_DELAY_MS, then no new connections while the requests in flight finish) and started again,
 * one after the other, while clients keep sending paid requests. Every client gets its 200 (at most a
 * few first get 202 and their 200 when they ask again with the same key), and the books are exact: the
 * organization is charged what the answers say, once.
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
  /** Sent again, with its key, when the first answer was 202. */
  followedUp?: boolean;
}

const sendMessage = (key: string, idempotencyKey: string, content: string) =>
  fetch(`${sut.url}/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "idempotency-key": idempotencyKey },
    // The local model sleeps when asked: requests are in flight whenever a replica is stopped.
    body: JSON.stringify({ model: LOCAL_MODEL, max_tokens: 50, messages: [{ role: "user", content }] }),
  });

it("restarts each text replica under load: no client error, every answer charged once", async () => {
  const credit = 1_000_000_000;
  const account = await sut.account({ credit, dailyBudget: credit });
  const answers: Answer[] = [];
  let sending = true;
  const client = async (n: number): Promise<void> => {
    for (let i = 0; sending; i++) {
      const idempotencyKey = randomUUID();
      const content = `[[sleep:150]] client ${n} request ${i}`;
      let res = await sendMessage(account.key, idempotencyKey, content);
      let followedUp = false;
      // A request on a connection the restart cut may have reached the replica: the gateway cannot know,
      // so it answers 202 (outcome not final yet), and the client asks again with the same key, as the
      // contract says. It must then get its one final answer.
      for (const deadline = Date.now() + 30_000; res.status === 202 && Date.now() < deadline;) {
        followedUp = true;
        await new Promise((r) => setTimeout(r, 200));
        res = await sendMessage(account.key, idempotencyKey, content);
      }
      answers.push({ status: res.status, body: (await res.json()) as Record<string, unknown>, followedUp });
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
  // A cut connection is the exception, not the rule: draining closes connections between answers.
  expect(answers.filter((a) => a.followedUp).length).toBeLessThanOrEqual(Math.ceil(answers.length * 0.05));

  const charged = answers.reduce((sum, a) => sum + (a.body.billing as { cost_microrub: number }).cost_microrub, 0);
  const balance = await sut.settledBalance(account.organizationId, 30_000);
  expect(balance).toMatchObject({ balance_microrub: credit - charged, reserved_microrub: 0 });
  const books = sut.booksCheck();
  expect(books.output).toMatch(/OK: the books balance/);
  expect(books.ok).toBe(true);
}, 180_000);
