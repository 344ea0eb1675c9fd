import { queryRows } from "@meter/testing";
import { startGateway, type GatewayHarness } from "./support/gateway-harness";

let g: GatewayHarness | undefined;

afterEach(async () => {
  await g?.close();
  g = undefined;
});

const model = (displayName: string) => ({
  enabled: true,
  display_name: displayName,
  provider: { kind: "local" },
  operations: { text: { input_microrub_per_1k_tokens: 1_000, output_microrub_per_1k_tokens: 3_000 } },
});

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** How many `GET /v1/models` billing-ledger has answered (its own /metrics). */
async function billingModelCalls(gw: GatewayHarness): Promise<number> {
  const text = await (await fetch(`${gw.billingUrl}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("http_request_duration_seconds_count{") && l.includes('route="/v1/models"') && l.includes('method="GET"'))
    .reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
}

describe("GET /v1/models from the gateway's copy", () => {
  it("answers repeated calls without asking billing-ledger, and shows a catalog change as soon as billing announces it", async () => {
    // A 60 s copy: the change can only show up within the test's seconds through billing.catalog.changed.
    g = await startGateway({ gatewayEnv: { MODELS_CACHE_TTL_MS: "60000" } });
    const gw = g;
    await until(() => gw.hearingRevocations(), 10_000, "gateway subscribed to billing's events");
    await gw.admin("PUT", "/admin/v1/models/meter-cached", model("Before"));
    const { key } = await gw.account({ scopes: ["text"] });
    const list = async () => {
      const res = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      return (await res.json()) as { object: string; data: { id: string; display_name: string }[] };
    };
    const displayName = async () => (await list()).data.find((m) => m.id === "meter-cached")?.display_name;

    await until(async () => (await displayName()) === "Before", 5_000, "the model listed");
    // The PUT's own billing.catalog.changed (and any other change billing had still to publish) may
    // arrive after the first listing and drop that copy: measure once billing has published every
    // change, from a copy that answered without asking billing.
    await until(
      async () => {
        const [row] = await queryRows<{ unpublished: number }>(
          gw.stack.env.BILLING_LEDGER_DATABASE_URL!,
          "SELECT count(*)::int AS unpublished FROM outbox_messages WHERE published_at IS NULL AND routing_key = 'billing.catalog.changed'",
        );
        if (row!.unpublished > 0) return false;
        // Published is not yet heard: the gateway's consumer gets it a moment later.
        await new Promise((r) => setTimeout(r, 250));
        const calls = await billingModelCalls(gw);
        await displayName();
        return (await billingModelCalls(gw)) === calls;
      },
      15_000,
      "the copy settled",
    );
    const before = await billingModelCalls(gw);
    for (let i = 0; i < 5; i++) expect(await displayName()).toBe("Before");
    expect(await billingModelCalls(gw)).toBe(before);

    await gw.admin("PUT", "/admin/v1/models/meter-cached", model("After"));
    await until(async () => (await displayName()) === "After", 5_000, "the change shown");
    expect((await list()).object).toBe("list");
  });

  it("still refuses a missing or wrong key before any copy is served", async () => {
    g = await startGateway({ gatewayEnv: { MODELS_CACHE_TTL_MS: "60000" } });
    const { key } = await g.account({ scopes: ["text"] });
    expect((await fetch(`${g.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    expect((await fetch(`${g.url}/v1/models`)).status).toBe(401);
    expect((await fetch(`${g.url}/v1/models`, { headers: { authorization: "Bearer mtr_nonsense" } })).status).toBe(401);
  });
});
