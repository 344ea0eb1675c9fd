import { randomUUID } from "node:crypto";
import type { HealthReport } from "@meter/contracts";
import { type BrokerProxy, publishByHand, startBrokerProxy, startSystemUnderTest, type SystemUnderTest, waitFor } from "@meter/testing";

/**
 * The operator's health report (`GET /admin/v1/health`, docs/api.md) against the real processes: every
 * service and text replica ready with its time, the topology's queues with their counts, a message the
 * billing consumer refuses showing as a dead letter, and a broker or a service gone still answered
 * (200, that part marked with its error), never with a credential in it.
 */
jest.setTimeout(120_000);

const EVERY_SERVICE = ["billing-ledger", "text", "files", "media-jobs", "mcp", "gateway"] as const;
const HOLD_COMMANDS = "billing-ledger.hold-commands";

let proxy: BrokerProxy;
let sut: SystemUnderTest;
beforeAll(async () => {
  proxy = await startBrokerProxy();
  // Every process reaches the broker through the proxy, so the test can take it away and give it back.
  sut = await startSystemUnderTest({ only: [...EVERY_SERVICE], replicas: { text: 2 }, brokerUrl: (url) => proxy.urlOf(url) });
}, 240_000);
afterAll(async () => {
  await sut?.close();
  await proxy?.close();
}, 60_000);

async function health(token = sut.adminToken): Promise<{ status: number; text: string; report: HealthReport; ms: number }> {
  const started = Date.now();
  const res = await fetch(`${sut.url}/admin/v1/health`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await res.text();
  return { status: res.status, text, report: JSON.parse(text) as HealthReport, ms: Date.now() - started };
}

/** No `user:password@` of any URL, nor the admin token, in what the operator's browser receives. */
function expectNoSecrets(text: string): void {
  expect(text).not.toMatch(/:\/\/[^/\s"@]+@/);
  expect(text).not.toContain(sut.adminToken);
  for (const value of Object.values(sut.env).filter((v) => /^(amqp|postgres(ql)?|redis):/.test(v))) {
    const password = new URL(value).password;
    if (password) expect(text).not.toContain(password);
  }
}

it("refuses a caller without the admin token (401), or with another token", async () => {
  const none = await health("");
  expect(none.status).toBe(401);
  expect((none.report as unknown as { error: { code: string } }).error.code).toBe("authentication_required");
  const wrong = await health(`adm_${randomUUID()}`);
  expect(wrong.status).toBe(401);
  expect((wrong.report as unknown as { error: { code: string } }).error.code).toBe("invalid_api_key");
});

it("reports every service and text replica ready, the queues with their counts, and the providers", async () => {
  // The workers are not waited for at start: until one has run, its queue reads as not declared (null).
  // The assertions read the very report that showed them all (on a loaded machine a later one has
  // once read a quorum queue as not declared for a moment).
  let answer!: Awaited<ReturnType<typeof health>>;
  await waitFor(
    async () => {
      answer = await health();
      // (A broker that did not answer within the probe's 1.5 s, as on a loaded machine, lists no queue at all.)
      const work = answer.report.broker.queues.filter((q) => q.role === "work");
      return answer.report.broker.available && work.length > 0 && work.every((q) => (q.consumers ?? 0) >= 1) && answer.report.services.every((s) => s.ready);
    },
    "every service ready, every work queue declared and consumed",
    60_000,
  );
  const { status, text, report } = answer;
  expect(status).toBe(200);
  expect(report.services.map((s) => s.service).sort()).toEqual([...EVERY_SERVICE, "text"].sort());
  expect(report.services.filter((s) => !s.ready)).toEqual([]);
  for (const s of report.services.filter((s) => s.service !== "gateway")) {
    expect(s.ms).toEqual(expect.any(Number));
    expect(s.error).toBeNull();
  }
  // The local clamd has the project's test signatures alone, and the report says so (files' scanner).
  expect(report.services.find((s) => s.service === "files")!.checks.scanner).toMatch(/^test signatures only \(ClamAV [\d.]+, no official database\)/);
  // Both replicas, each by its own address.
  expect(new Set(report.services.filter((s) => s.service === "text").map((s) => s.url)).size).toBe(2);

  expect(report.broker).toMatchObject({ available: true, error: null });
  const queue = (name: string) => report.broker.queues.find((q) => q.name === name);
  for (const work of [HOLD_COMMANDS, "files.verification", "media-jobs.jobs"]) {
    expect(queue(work)).toEqual({ name: work, role: "work", messages: expect.any(Number), consumers: expect.any(Number) });
    expect(queue(work)!.consumers).toBeGreaterThanOrEqual(1);
    expect(queue(`${work}.dlq`)).toEqual({ name: `${work}.dlq`, role: "dead_letter", messages: 0, consumers: 0 });
  }
  expect(queue("meter.unrouted")).toMatchObject({ role: "unrouted", messages: expect.any(Number) });

  expect(report.providers.available).toBe(true);
  expect(report.providers.models.map((m) => m.model)).toEqual(expect.arrayContaining(["meter-local-echo", "fake-claude"]));
  expectNoSecrets(text);
});

it("counts a message the consumer refuses in its dead-letter queue", async () => {
  // Unsigned: billing-ledger dead-letters it at once, without trying it (packages/messaging, "Trust").
  await publishByHand(sut.env.RABBITMQ_URL!, {
    routingKey: "billing.hold.settle",
    content: JSON.stringify({ version: "v1", hold_id: randomUUID(), amount_microrub: 1 }),
    messageId: randomUUID(),
  });
  await waitFor(async () => (await health()).report.broker.queues.find((q) => q.name === `${HOLD_COMMANDS}.dlq`)?.messages === 1, "one dead letter");
});

it("answers 200 with the broker unavailable while it is away, and sees it back", async () => {
  proxy.cut();
  try {
    const { status, text, report } = await health();
    expect(status).toBe(200);
    expect(report.broker).toMatchObject({ available: false, queues: [] });
    expect(report.broker.error).toEqual(expect.any(String));
    // The rest is still reported: text answers without the broker; the providers are read from it.
    expect(report.services.find((s) => s.service === "mcp")?.ready).toBe(true);
    expect(report.providers.available).toBe(true);
    expectNoSecrets(text);
  } finally {
    proxy.restore();
  }
  await waitFor(async () => (await health()).report.broker.available, "the broker back");
});

it("reports a stopped service not ready with its error, and still answers at once", async () => {
  // Services whose readiness counts their broker connection come back some time after the broker does.
  await waitFor(async () => (await health()).report.services.every((s) => s.ready), "every service ready again");
  await sut.system.kill("mcp", "SIGKILL");
  const { status, text, report, ms } = await health();
  expect(status).toBe(200);
  const mcp = report.services.find((s) => s.service === "mcp")!;
  expect(mcp).toMatchObject({ ready: false, ms: null });
  expect(mcp.error).toMatch(/ECONNREFUSED|no answer/);
  expect(report.services.filter((s) => s.service !== "mcp" && !s.ready)).toEqual([]);
  // Every probe is bounded (1.5 s) and they run side by side.
  expect(ms).toBeLessThan(5_000);
  expectNoSecrets(text);
});
