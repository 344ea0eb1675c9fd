import { randomUUID } from "node:crypto";
import { CommandQueues } from "@meter/contracts";
import { connectBus, type Bus } from "@meter/messaging";
import { createLogger } from "@meter/service-kit";
import { createTestVhost, type TestVhost } from "@meter/testing";
import { startHoldCommandConsumer } from "../src/consumers/hold-commands.consumer";
import { SERVICE, seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

let h: BillingHarness;
let vhost: TestVhost;
let bus: Bus;
beforeAll(async () => {
  h = await startBilling();
  vhost = await createTestVhost();
  bus = await connectBus({ url: vhost.url, name: "hold-commands-test" });
  // Publishers declare the command queue (as the text service does), so commands wait for billing.
  await bus.declareQueue(CommandQueues.billingHoldCommands);
});
afterAll(async () => {
  await h.assertBooksBalance();
  await bus.close();
  await vhost.drop();
  await h.close();
});

async function until(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}

const logger = createLogger("hold-commands-test", "silent");

it("a settlement published while billing is down is applied once billing is back; a duplicate is applied once", async () => {
  const a = await seedAccount(h, { credit: 100_000 });
  const settleId = randomUUID();
  const releaseId = randomUUID();
  for (const id of [settleId, releaseId]) {
    await h
      .call("POST", "/internal/v1/holds", SERVICE)
      .send({ hold_id: id, key_id: a.keyId, amount_microrub: 10_000, operation: "text", model: "m", source: "text" })
      .expect(201);
  }

  // Billing's consumer is not running: the commands wait in the queue.
  await bus.publish("billing.hold.settle", { version: "v1", hold_id: settleId, amount_microrub: 6_000 });
  await bus.publish("billing.hold.settle", { version: "v1", hold_id: settleId, amount_microrub: 6_000 });
  await bus.publish("billing.hold.release", { version: "v1", hold_id: releaseId, reason: "upstream failed" });
  await new Promise((r) => setTimeout(r, 300));
  expect((await h.services.holdReads.find(settleId))?.status).toBe("active");

  const consumer = await startHoldCommandConsumer(bus, h.services.holds, logger);
  try {
    await until(async () => (await h.services.holdReads.find(settleId))?.status === "settled" && (await h.services.holdReads.find(releaseId))?.status === "released");
    // A late duplicate changes nothing either.
    await bus.publish("billing.hold.settle", { version: "v1", hold_id: settleId, amount_microrub: 6_000 });
    await new Promise((r) => setTimeout(r, 300));
  } finally {
    await consumer.stop();
  }

  const balance = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200);
  expect(balance.body).toMatchObject({ balance_microrub: 94_000, reserved_microrub: 0 });
  const ledger = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/ledger`).expect(200);
  const settles = ledger.body.data.filter((e: { kind: string; hold_id: string }) => e.kind === "settle" && e.hold_id === settleId);
  expect(settles).toHaveLength(1);
});
