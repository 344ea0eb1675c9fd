import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createLogger, createServiceApp, generateInternalKeySet, InternalAuth, InternalClient, Metrics, parseInternalKeys } from "@meter/service-kit";
import { BillingClient } from "./billing-client";

/**
 * The holder's side of allowances in billing's client: a grant travels as a hold op like the others,
 * and a refusal that money parked in allowances caused reaches the key holder with its Retry-After
 * (and without the "do not retry" an ordinary budget refusal carries).
 */
let billingStub: Server;
let service: Server;
let http: InternalClient;
let billing: BillingClient;
const seenOps: { op: string }[] = [];

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

const refusal = (retryAfter?: number) => ({
  ok: false,
  error: { status: 429, code: "daily_budget_exceeded", message: "over budget", ...(retryAfter ? { retry_after_seconds: retryAfter } : {}) },
});

beforeAll(async () => {
  billingStub = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const { ops } = JSON.parse(body) as { ops: { op: string; hold_id: string; key_id: string }[] };
      seenOps.push(...ops);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ results: ops.map((o) => (o.op === "grant" ? refusal() : refusal(o.key_id.endsWith("1") ? 3 : undefined))) }));
    });
  });
  const keys = generateInternalKeySet();
  const auth = new InternalAuth(parseInternalKeys("text", keys.signingKeys.text, keys.publicKeys));
  http = new InternalClient({ baseUrl: await listen(billingStub), auth, audience: "billing-ledger" });
  billing = new BillingClient(http);
  const app = createServiceApp({ logger: createLogger("text", "silent"), metrics: new Metrics("text"), readiness: [] }, (a) => {
    a.get("/place/:key", async (req, res) => {
      res.json(
        await billing.placeHold({
          hold_id: "00000000-0000-4000-8000-000000000001",
          key_id: req.params.key,
          amount_microrub: 100,
          operation: "text",
          model: "m",
          source: "text",
          owner_ref: "r",
        }),
      );
    });
  });
  service = createServer(app);
  await listen(service);
});
afterAll(async () => {
  await http.close();
  billingStub.close();
  service.close();
});

const call = (key: string) => fetch(`http://127.0.0.1:${(service.address() as AddressInfo).port}/place/${key}`);

it("a refusal caused by parked allowance money answers with its Retry-After, not with 'do not retry'", async () => {
  const res = await call("00000000-0000-4000-8000-000000000001");
  expect(res.status).toBe(429);
  expect(res.headers.get("retry-after")).toBe("3");
  expect(res.headers.get("x-should-retry")).toBeNull();
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe("daily_budget_exceeded");
});

it("an ordinary budget refusal still says not to retry, and has no Retry-After", async () => {
  const res = await call("00000000-0000-4000-8000-000000000002");
  expect(res.status).toBe(429);
  expect(res.headers.get("retry-after")).toBeNull();
  expect(res.headers.get("x-should-retry")).toBe("false");
});

it("a grant is a hold op; billing's refusal of it comes back as its error", async () => {
  const grant = billing.grant({
    hold_id: "00000000-0000-4000-8000-000000000003",
    key_id: "00000000-0000-4000-8000-000000000004",
    amount_microrub: 800,
    min_microrub: 400,
    operation: "text",
    source: "text",
    owner_ref: "00000000-0000-4000-8000-000000000003",
  });
  await expect(grant).rejects.toMatchObject({ code: "daily_budget_exceeded" });
  expect(seenOps.at(-1)).toMatchObject({ op: "grant", hold_id: "00000000-0000-4000-8000-000000000003", min_microrub: 400 });
});
