import { randomUUID } from "node:crypto";
import { Metrics, createLogger } from "@meter/service-kit";
import { HoldExpiryService } from "../src/holds/hold-expiry.service";
import { holdCalls, seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

let h: BillingHarness;
beforeAll(async () => {
  h = await startBilling();
});
afterAll(async () => {
  await h.assertBooksBalance();
  await h.close();
});

it("expires only holds older than the window, frees them with nothing charged, and reports each", async () => {
  const ops = holdCalls(h);
  const a = await seedAccount(h, { credit: 50_000 });
  const old = randomUUID();
  const recent = randomUUID();
  for (const id of [old, recent]) expect((await ops.place(a.keyId, 5_000, id)).status).toBe(200);
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
  expect(reported).toEqual([expect.objectContaining({ hold_id: old, source: "text", owner_ref: `req-${old}` })]);
  expect(await metrics.registry.getSingleMetricAsString("billing_holds_expired_total")).toMatch(/source="text".*\} 1$/m);

  const balance = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200);
  expect(balance.body).toMatchObject({ balance_microrub: 50_000, reserved_microrub: 5_000 });
  const report = await h.call("GET", "/admin/v1/holds?status=expired").expect(200);
  expect(report.body.data.map((x: { hold_id: string }) => x.hold_id)).toEqual([old]);
  const ledger = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/ledger`).expect(200);
  expect(ledger.body.data.find((e: { hold_id: string; kind: string }) => e.hold_id === old && e.kind === "expire")).toMatchObject({
    reference: "not settled or released within 72 h",
  });
  // An expired hold cannot be settled afterwards.
  expect((await ops.settle(old, 1)).status).toBe(409);
});
