import { randomUUID } from "node:crypto";
import { LOCAL_MODEL, startBrokerProxy, startSystemUnderTest, type BrokerProxy, type SystemUnderTest, queryRows } from "@meter/testing";

/**
 * A broker outage under load (docs/api.md, "Allowances"): the services lose RabbitMQ (a TCP proxy
 * between them and the broker is cut; the machine's broker stays up for other runs) while 16 clients
 * keep sending on one key of an organization with plenty of money. Nobody with money is refused
 * while the broker is down or after it is back; afterwards every request is final, every charge the
 * clients were told of is in the ledger once, and the books check passes.
 */

const CONCURRENCY = 16;
/** The credit, in estimates of one request; a request costs about a sixth of its estimate here. */
const CREDIT_ESTIMATES = 600;
/** Requests answered with the broker there, before the outage and after it. */
const AROUND_REQUESTS = 200;
/**
 * The broker stays away until this many requests were answered without it (their estimates twice the
 * credit, their costs a third of it), or for OUTAGE_MAX_MS on a slow machine.
 */
const OUTAGE_REQUESTS = 2 * CREDIT_ESTIMATES;
const OUTAGE_MAX_MS = 90_000;

interface Answer {
  status: number;
  body: Record<string, unknown>;
  at: number;
}

let proxy: BrokerProxy;
let sut: SystemUnderTest;
beforeAll(async () => {
  proxy = await startBrokerProxy();
  sut = await startSystemUnderTest({ brokerUrl: (url) => proxy.urlOf(url) });
}, 120_000);
afterAll(async () => {
  await sut?.close();
  await proxy?.close();
});

it("a broker outage under load refuses nobody with money, and the books are exact afterwards", async () => {
  const payload = { model: LOCAL_MODEL, max_tokens: 64, messages: [{ role: "user", content: "a request while the broker may be down" }] };
  const probe = await sut.account();
  const quote = await fetch(`${sut.url}/v1/chat/quote`, {
    method: "POST",
    headers: { authorization: `Bearer ${probe.key}`, "content-type": "application/json" },
    body: JSON.stringify(payload),
  });
  const estimate = ((await quote.json()) as { estimated_cost_microrub: number }).estimated_cost_microrub;
  const credit = CREDIT_ESTIMATES * estimate;
  const account = await sut.account({ credit, dailyBudget: 1_000_000_000_000 });

  const send = (idempotencyKey: string): Promise<Answer> =>
    fetch(`${sut.url}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json", "idempotency-key": idempotencyKey },
      body: JSON.stringify(payload),
    }).then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown>, at: Date.now() }));

  let cutAt = Infinity;
  let restoredAt = Infinity;
  const answers: (Answer & { key: string })[] = [];
  const since = (t: number) => answers.filter((a) => a.at >= t).length;
  const worker = async () => {
    while (since(restoredAt) < AROUND_REQUESTS) {
      const key = randomUUID();
      answers.push({ ...(await send(key)), key });
    }
  };
  const until = async (done: () => boolean) => {
    while (!done()) await new Promise((r) => setTimeout(r, 50));
  };
  const samples: string[] = [];
  const outage = (async () => {
    await until(() => answers.length >= AROUND_REQUESTS);
    cutAt = Date.now();
    proxy.cut();
    while (since(cutAt) < OUTAGE_REQUESTS && Date.now() < cutAt + OUTAGE_MAX_MS) {
      const [row] = await queryRows<{ reserved: string; parked: string; open: string }>(
        sut.env.BILLING_LEDGER_DATABASE_URL!,
        `SELECT COALESCE(sum(amount - consumed) FILTER (WHERE status = 'active'), 0) AS reserved,
                COALESCE(sum(amount - consumed) FILTER (WHERE status = 'active' AND kind = 'allowance'), 0) AS parked,
                count(*) FILTER (WHERE status = 'active' AND kind = 'allowance') AS open
         FROM holds WHERE organization_id = $1`,
        [account.organizationId],
      );
      samples.push(`t=${Date.now() - cutAt} ms, ${since(cutAt)} answered: billing reserves ${row!.reserved}, of it ${row!.parked} in ${row!.open} allowances`);
      await new Promise((r) => setTimeout(r, 1_000));
    }
    proxy.restore();
    restoredAt = Date.now();
  })();
  await Promise.all([...Array.from({ length: CONCURRENCY }, worker), outage]);

  // A pending answer (202) is final once the same request, sent again, says so.
  for (const a of answers) {
    for (let i = 0; a.status === 202 && i < 60; i++) {
      await new Promise((r) => setTimeout(r, 1_000));
      Object.assign(a, await send(a.key));
    }
  }
  const charged = answers.filter((a) => a.status === 200).reduce((sum, a) => sum + (a.body.billing as { cost_microrub: number }).cost_microrub, 0);
  const refused = answers.filter((a) => a.status !== 200);
  const during = answers.filter((a) => a.at >= cutAt && a.at < restoredAt).length;
  console.log(
    `broker outage drill: ${answers.length} requests (${during} answered during the ${restoredAt - cutAt} ms outage), estimate ${estimate}, credit ${credit}, ` +
      `charged ${charged}; answers by status ${JSON.stringify(countBy(answers.map((a) => a.status)))}; ` +
      `refused at ${JSON.stringify(refused.slice(0, 5).map((a) => ({ t: a.at - cutAt, status: a.status, code: (a.body.error as { code?: string } | undefined)?.code })))}\n` +
      samples.join("\n"),
  );
  // The clients' money was never short: what they were charged leaves room for every request in flight.
  expect(credit - charged).toBeGreaterThan(CONCURRENCY * estimate);
  expect(refused.map((a) => ({ status: a.status, body: a.body, t: a.at - cutAt }))).toEqual([]);

  const balance = await sut.settledBalance(account.organizationId, 120_000);
  expect(balance).toMatchObject({ balance_microrub: credit - charged, reserved_microrub: 0 });
  const [text] = await queryRows<{ unfinished: string; unclosed: string }>(
    sut.env.TEXT_DATABASE_URL!,
    `SELECT (SELECT count(*) FROM text_requests WHERE state = 'reserving') AS unfinished,
            (SELECT count(*) FROM allowances WHERE state <> 'closed') AS unclosed`,
  );
  expect(text).toEqual({ unfinished: "0", unclosed: "0" });
  await sut.assertBooksBalance();
}, 300_000);

function countBy(values: number[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
