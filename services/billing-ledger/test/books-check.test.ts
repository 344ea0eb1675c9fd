import { randomUUID } from "node:crypto";
import { BooksCheckService, formatBooksReport } from "../src/accounts/books-check.service";
import { BooksRepository } from "../src/accounts/books.repository";
import { holdCalls, seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

let h: BillingHarness;
beforeAll(async () => {
  h = await startBilling();
});
afterAll(async () => {
  await h.close();
});

it("balances after real traffic and names each kind of discrepancy it finds", async () => {
  const ops = holdCalls(h);
  const a = await seedAccount(h, { credit: 50_000 });
  const ids = [randomUUID(), randomUUID(), randomUUID()];
  for (const id of ids) expect((await ops.place(a.keyId, 5_000, id)).status).toBe(200);
  expect((await ops.settle(ids[0]!, 4_000)).status).toBe(200);
  expect((await ops.release(ids[1]!, "t")).status).toBe(200);

  const books = new BooksCheckService(new BooksRepository(h.db));
  const clean = await books.run();
  expect(clean.discrepancies).toEqual([]);
  expect(clean.holds).toMatchObject({ active: 1, settled: 1, released: 1 });
  expect(clean.active_holds_without_owner).toBe(0);
  const org = clean.organizations.find((o) => o.organization_id === a.organizationId)!;
  expect(org).toMatchObject({ credits_microrub: 50_000, settled_microrub: 4_000, active_holds_microrub: 5_000, available_microrub: 41_000 });

  // Money appearing from nowhere: the balance no longer equals credits - settled.
  await h.db.$executeRaw`UPDATE organizations SET balance = balance + 1 WHERE id = ${a.organizationId}::uuid`;
  const broken = await books.run();
  expect(broken.discrepancies.some((d) => d.includes("credits") && d.includes("!= balance"))).toBe(true);
  await h.db.$executeRaw`UPDATE organizations SET balance = balance - 1 WHERE id = ${a.organizationId}::uuid`;

  // A key reservation its active holds do not explain.
  await h.db.$executeRaw`UPDATE api_keys SET reserved = reserved + 7 WHERE id = ${a.keyId}::uuid`;
  expect((await books.run()).discrepancies).toEqual([`key ${a.keyId}: reserved 5007 != its active holds 5000`]);
  await h.db.$executeRaw`UPDATE api_keys SET reserved = reserved - 7 WHERE id = ${a.keyId}::uuid`;

  // A day's spending its settled holds do not explain.
  await h.db.$executeRaw`UPDATE key_daily_usage SET spent = spent + 3 WHERE key_id = ${a.keyId}::uuid`;
  expect((await books.run()).discrepancies.some((d) => d.startsWith(`key ${a.keyId} on `) && d.includes("spent 4003"))).toBe(true);
  await h.db.$executeRaw`UPDATE key_daily_usage SET spent = spent - 3 WHERE key_id = ${a.keyId}::uuid`;

  expect((await books.run()).discrepancies).toEqual([]);
});

it("reports active holds without an owner (placed before owners were recorded) without failing", async () => {
  const a = await seedAccount(h, { credit: 10_000 });
  const legacy = randomUUID();
  expect((await holdCalls(h).place(a.keyId, 1_000, legacy)).status).toBe(200);
  // Only a hold from before the migration can lack an owner: the constraint is NOT VALID for those rows.
  await h.db.$executeRawUnsafe("ALTER TABLE holds DROP CONSTRAINT holds_active_has_owner");
  try {
    await h.db.$executeRaw`UPDATE holds SET owner_ref = NULL WHERE id = ${legacy}::uuid`;
  } finally {
    await h.db.$executeRawUnsafe("ALTER TABLE holds ADD CONSTRAINT holds_active_has_owner CHECK (status <> 'active' OR owner_ref IS NOT NULL) NOT VALID");
  }
  const report = await new BooksCheckService(new BooksRepository(h.db)).run();
  expect(report.active_holds_without_owner).toBe(1);
  expect(report.discrepancies).toEqual([]);
  expect(formatBooksReport(report, "test")).toContain("1 active holds have no owner");
  // It can still be resolved: the constraint only stops new ownerless active holds.
  expect((await holdCalls(h).release(legacy, "legacy")).status).toBe(200);
});

it("the database itself refuses to reserve beyond the balance or to rewrite the ledger", async () => {
  const a = await seedAccount(h, { credit: 100 });
  await expect(h.db.$executeRaw`UPDATE organizations SET reserved = 101 WHERE id = ${a.organizationId}::uuid`).rejects.toThrow();
  await expect(h.db.$executeRaw`UPDATE ledger_entries SET amount = 1 WHERE organization_id = ${a.organizationId}::uuid`).rejects.toThrow();
  await expect(h.db.$executeRaw`UPDATE api_keys SET reserved = -1 WHERE id = ${a.keyId}::uuid`).rejects.toThrow();
});
