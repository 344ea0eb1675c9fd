import { createTestVhost, testKeys, type TestVhost } from "@meter/testing";
import { connectBus, type Bus, type Consumer, type MessageMeta } from "@meter/messaging";
import { seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

/**
 * Billing tells the rest of the system about revoked keys (gateways drop them from their caches) and
 * catalog changes (services refresh their copy), through its outbox and relay.
 */
let h: BillingHarness;
let vhost: TestVhost;
let bus: Bus;
let consumer: Consumer;
const heard: { routingKey: string; payload: unknown }[] = [];

beforeAll(async () => {
  vhost = await createTestVhost();
  // Billing's own relay publishes to this vhost, where the test listens as a gateway would.
  h = await startBilling({ env: { RABBITMQ_URL: vhost.url } });
  bus = await connectBus({ url: vhost.url, name: "billing-events-test", topology: "await", keys: testKeys("gateway") });
  consumer = await bus.consume({
    queue: "test.billing-events",
    exclusive: true,
    routingKeys: ["billing.key.revoked", "billing.catalog.changed"],
    handler: async (payload, meta: MessageMeta) => {
      heard.push({ routingKey: meta.routingKey, payload });
    },
  });
});
afterAll(async () => {
  await consumer?.stop();
  await bus?.close();
  await vhost?.drop();
  await h?.close();
});

async function heardEventually(expected: { routingKey: string; payload: unknown }): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!heard.some((m) => JSON.stringify(m) === JSON.stringify(expected))) {
    if (Date.now() > deadline) throw new Error(`never heard ${JSON.stringify(expected)}; heard ${JSON.stringify(heard)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function outboxRows(routingKey: string, field: string, value: string): Promise<number> {
  const rows = await h.db.$queryRawUnsafe<{ n: bigint }[]>(
    "SELECT count(*) AS n FROM outbox_messages WHERE routing_key = $1 AND payload ->> $2 = $3",
    routingKey,
    field,
    value,
  );
  return Number(rows[0]?.n ?? 0);
}

test("revoking a key publishes billing.key.revoked once, however often it is revoked", async () => {
  const { keyId } = await seedAccount(h);
  await h.call("POST", `/admin/v1/keys/${keyId}/revoke`).expect(200);
  await h.call("POST", `/admin/v1/keys/${keyId}/revoke`).expect(200);
  await heardEventually({ routingKey: "billing.key.revoked", payload: { version: "v1", key_id: keyId } });
  expect(await outboxRows("billing.key.revoked", "key_id", keyId)).toBe(1);
});

test("every catalog change publishes billing.catalog.changed; a refused one publishes nothing", async () => {
  const model = {
    enabled: true,
    provider: { kind: "local" },
    operations: { text: { input_microrub_per_1k_tokens: 1_000, output_microrub_per_1k_tokens: 2_000 } },
  };
  const id = `events-${Date.now()}`;
  await h.call("PUT", `/admin/v1/models/${id}`, { kind: "admin" }, model).expect(201);
  await h.call("PUT", `/admin/v1/models/${id}`, { kind: "admin" }, { ...model, enabled: false }).expect(200);
  await h.call("PUT", `/admin/v1/models/${id}`, { kind: "admin" }, { ...model, colour: "red" }).expect(400);
  await heardEventually({ routingKey: "billing.catalog.changed", payload: { version: "v1", model_id: id } });
  expect(await outboxRows("billing.catalog.changed", "model_id", id)).toBe(2);
});
