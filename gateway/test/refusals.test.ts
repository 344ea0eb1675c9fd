import { createServer, type Server } from "node:http";
import type { RequestLogEntry, RequestLogList } from "@meter/contracts";
import { closeServer, listen } from "@meter/service-kit";
import { startGateway, type GatewayHarness } from "./support/gateway-harness";

/**
 * Refusals in the request log (docs/api.md "Request log"): a key's request the gateway refuses (body
 * limits, the per-minute limit) or the service behind it refuses (its model, its budget) is an entry
 * of `GET /v1/usage/requests` within seconds, with its status, code, message and model, collapsed
 * when repeated. The gateway sends them in batches, off the request path: refusals are answered
 * while billing-ledger is away, and their entries arrive once it is back.
 */

/** A text service stand-in answering as the real one refuses: an unknown model, a spent budget. */
function refusingService(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const { model } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model: string };
      res.setHeader("content-type", "application/json");
      if (model === "meter-local-echo") {
        res.statusCode = 200;
        return res.end(JSON.stringify({ type: "message", content: [] }));
      }
      const [status, code, message] =
        model === "no-such-model"
          ? [404, "model_not_found", `model ${model} does not exist`]
          : [429, "daily_budget_exceeded", "this API key's daily budget does not cover this request"];
      res.statusCode = status;
      res.end(JSON.stringify({ type: "error", error: { code, message, type: "x", request_id: "r" } }));
    });
  });
  return listen(server, 0, "127.0.0.1").then((port) => ({ server, url: `http://127.0.0.1:${port}` }));
}

let g: GatewayHarness;
let service: { server: Server; url: string };
beforeAll(async () => {
  service = await refusingService();
  g = await startGateway({
    services: { text: service.url },
    textLimit: 2048,
    rateLimitPerMinute: 30,
    keyCacheTtlMs: 5_000,
    gatewayEnv: { REFUSAL_LOG_FLUSH_MS: "100" },
  });
}, 60_000);
afterAll(async () => {
  await g?.close();
  service.server.closeAllConnections();
  await closeServer(service.server);
});

function message(key: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${g.url}/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "idempotency-key": crypto.randomUUID(), ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

const ask = (model: string) => ({ model, max_tokens: 16, messages: [{ role: "user", content: "hi" }] });

/** The key's own list; the operator's list of its organization once the key is at its per-minute limit. */
async function entriesOf(
  a: { key: string; organizationId: string },
  enough: number | ((entries: RequestLogEntry[]) => boolean),
  asOperator = false,
): Promise<RequestLogEntry[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    let page: RequestLogList;
    if (asOperator) page = await g.admin<RequestLogList>("GET", `/admin/v1/organizations/${a.organizationId}/requests`);
    else {
      const res = await fetch(`${g.url}/v1/usage/requests?limit=100`, { headers: { authorization: `Bearer ${a.key}` } });
      expect(res.status).toBe(200);
      page = (await res.json()) as RequestLogList;
    }
    const done = typeof enough === "number" ? page.data.length >= enough : enough(page.data);
    if (done || Date.now() > deadline) return page.data;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("refusals of a key's requests", () => {
  it("become entries with their status, error and model, whoever refused them, and repeats are counted", async () => {
    const a = await g.account({ scopes: ["text"] });
    expect((await message(a.key, ask("no-such-model"))).status).toBe(404);
    expect((await message(a.key, ask("no-such-model"))).status).toBe(404);
    expect((await message(a.key, ask("meter-local-poor"))).status).toBe(429);
    expect((await message(a.key, { ...ask("big-model"), messages: [{ role: "user", content: "x".repeat(4096) }] })).status).toBe(413);
    expect((await message(a.key, "{not json")).status).toBe(400);
    expect((await message(a.key, ask("meter-local-echo"), { "content-type": "application/json; charset=utf-16" })).status).toBe(415);
    // Not refusals of this kind: a success, and a request without a valid key.
    expect((await message(a.key, ask("meter-local-echo"))).status).toBe(200);
    expect((await message("mtr_not-a-key-at-all-0000000000000000", ask("no-such-model"))).status).toBe(401);

    const entries = await entriesOf(a, 5);
    const by = (code: string) => entries.find((e) => e.error?.code === code);
    expect(entries).toHaveLength(5);
    expect(entries.every((e) => e.outcome === "refused" && e.cost_microrub === 0 && e.endpoint === "/v1/messages")).toBe(true);
    expect(by("model_not_found")).toMatchObject({ status: 404, model: "no-such-model", count: 2, error: { message: "model no-such-model does not exist" } });
    expect(by("daily_budget_exceeded")).toMatchObject({ status: 429, model: "meter-local-poor", count: 1 });
    // The gateway's own refusals: the body was never parsed, so no model is known.
    expect(by("payload_too_large")).toMatchObject({ status: 413, model: null });
    expect(by("invalid_json")).toMatchObject({ status: 400, model: null });
    expect(by("unsupported_media_type")).toMatchObject({ status: 415 });
  });

  it("records the per-minute limit's refusals, and a flood of them is one entry", async () => {
    const a = await g.account({ scopes: ["text"] });
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) statuses.push((await message(a.key, ask("meter-local-echo"))).status);
    expect(statuses.filter((s) => s === 429)).toHaveLength(30);
    // The limit is counted once the body is read (a slow sender holds no place meanwhile): the model is known.
    const entries = await entriesOf(a, (e) => e[0]?.count === 30, true);
    expect(entries).toEqual([
      expect.objectContaining({
        outcome: "refused",
        status: 429,
        count: 30,
        model: "meter-local-echo",
        error: expect.objectContaining({ code: "rate_limited" }),
      }),
    ]);
    const metrics = await (await fetch(`${g.internalUrl}/metrics`)).text();
    expect(metrics).toMatch(/gateway_refusals_total\{status="429",service="gateway"\} \d+/);
  });

  it("answers refusals while billing-ledger is away, and writes their entries once it is back", async () => {
    const a = await g.account({ scopes: ["text"] });
    // The key is in the gateway's cache now; billing is needed only for the log.
    expect((await message(a.key, ask("meter-local-echo"))).status).toBe(200);
    await g.stopBillingHttp();
    try {
      const started = Date.now();
      expect((await message(a.key, "{oops")).status).toBe(400);
      expect((await message(a.key, "{oops")).status).toBe(400);
      expect(Date.now() - started).toBeLessThan(2_000);
      await new Promise((r) => setTimeout(r, 500));
    } finally {
      await g.startBillingHttp();
    }
    const entries = await entriesOf(a, (e) => e[0]?.count === 2);
    expect(entries).toEqual([expect.objectContaining({ outcome: "refused", status: 400, count: 2, error: expect.objectContaining({ code: "invalid_json" }) })]);
  });
});
