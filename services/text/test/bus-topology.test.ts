import path from "node:path";
import request from "supertest";
import { connectBus, type Bus } from "@meter/messaging";
import { createLogger } from "@meter/service-kit";
import { createTestDatabase, createTestVhost, testKeyEnv, testKeys, type TestDatabase, type TestVhost } from "@meter/testing";
import { compose, type TextComposition } from "../src/composition";
import { loadConfig } from "../src/config";

/**
 * Text on a broker whose topology's owner (billing-ledger) never ran: it starts, declares nothing,
 * says so in /readyz, and is ready once the owner has declared the exchanges.
 */
let database: TestDatabase;
let vhost: TestVhost;
let text: TextComposition | undefined;
let owner: Bus | undefined;

beforeAll(async () => {
  [database, vhost] = await Promise.all([createTestDatabase(path.resolve(__dirname, "..")), createTestVhost()]);
}, 60_000);
afterAll(async () => {
  await text?.close();
  await owner?.close();
  await vhost?.drop();
  await database?.drop();
});

it("starts before the bus topology exists, is not ready while it waits, and is once billing-ledger declared it", async () => {
  // Each as its own broker user, as deployed: text's may declare none of the topology.
  const urls = await vhost.deployableUrls();
  text = await compose(
    loadConfig({ ...testKeyEnv("text"), TEXT_DATABASE_URL: database.url, RABBITMQ_URL: urls.text, BILLING_LEDGER_URL: "http://127.0.0.1:9" }),
    { logger: createLogger("text-topology-test", "silent") },
  );
  const waiting = await request(text.app).get("/readyz");
  expect(waiting.status).toBe(503);
  expect(waiting.body).toMatchObject({
    status: "unavailable",
    checks: { database: "ok", bus_topology: expect.stringMatching(/waiting for the bus topology/) },
  });

  owner = await connectBus({ url: urls["billing-ledger"], name: "billing-ledger", topology: "declare", keys: testKeys("billing-ledger") });
  const deadline = Date.now() + 10_000;
  let ready = await request(text.app).get("/readyz");
  while (ready.status !== 200 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    ready = await request(text.app).get("/readyz");
  }
  expect(ready.body).toEqual({ status: "ok", checks: { database: "ok", bus_topology: "ok" } });
});
