import { randomUUID } from "node:crypto";
import { Metrics, createLogger } from "@meter/service-kit";
import { HoldExpiryService } from "../src/services/hold-expiry.service";
import { SERVICE, seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

let h: BillingHarness;
beforeAll(async () => {
  h = await startBilling();
});
afterAll(async () => {
  await h.assertBooksBalance();
  await h.close();
});

it("expires only holds older than the window, frees them with nothing charged, and reports each", async () => {
  const a = await seedAccount(h, { credit: 50_000 });
  const old = randomUUID();
  const recent = randomUUID();
  for (const id of [old, recent]) {
    await h
      .call("POST", "/internal/v1/holds", SERVICE)
      .send({ hold_id: id, key_id: a.keyId, amount_microrub: 5_000, operation: "text", model: "m", source: "text" })
      .expect(201);
  }
  await h.db.$executeRaw`UPDATE holds SET created_at = now() - interval '73 hours' WHERE id = ${old}::uuid`;

  const reported: unknown[] = [];
  const logger = createLogger("expiry-test", "error");
  logger.error = ((obj: unknown) => void reported.push(obj)) as typeof logger.error;
  const metrics = new Metrics("billing-ledger");
  const expired = metrics.counter("billing_holds_expired_total", "expired", ["source"]);
  const sweeper = new HoldExpiryService(h.services.holdReads, h.services.holds, 72, logger, expired);

  expect(await sweeper.sweep()).toBe(1);
  expect(await sweeper.sweep()).toBe(0);
  expect((await h.services.holdReads.find(old))?.status).toBe("expired");
  expect((await h.services.holdReads.find(recent))?.status).toBe("active");
  expect(reported).toEqual([expect.objectContaining({ hold_id: old, source: "text" })]);
  expect(await metrics.registry.getSingleMetricAsString("billing_holds_expired_total")).toMatch(/source="text".*\} 1$/m);

  const balance = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200);
  expect(balance.body).toMatchObject({ balance_microrub: 50_000, reserved_microrub: 5_000 });
  const report = await h.call("GET", "/admin/v1/holds?status=expired").expect(200);
  expect(report.body.data.map((x: { hold_id: string }) => x.hold_id)).toEqual([old]);
  // An expired hold cannot be settled afterwards.
  await h.call("POST", `/internal/v1/holds/${old}/settle`, SERVICE).send({ amount_microrub: 1 }).expect(409);
});
