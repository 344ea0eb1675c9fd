import { randomUUID } from "node:crypto";
import { BooksCheckService } from "../src/services/books-check.service";
import { SERVICE, seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

let h: BillingHarness;
beforeAll(async () => {
  h = await startBilling();
});
afterAll(async () => {
  await h.close();
});

it("balances after real traffic and names each kind of discrepancy it finds", async () => {
  const a = await seedAccount(h, { credit: 50_000 });
  const ids = [randomUUID(), randomUUID(), randomUUID()];
  for (const id of ids) {
    await h
      .call("POST", "/internal/v1/holds", SERVICE)
      .send({ hold_id: id, key_id: a.keyId, amount_microrub: 5_000, operation: "text", model: "m", source: "text" })
      .expect(201);
  }
  await h.call("POST", `/internal/v1/holds/${ids[0]}/settle`, SERVICE).send({ amount_microrub: 4_000 }).expect(200);
  await h.call("POST", `/internal/v1/holds/${ids[1]}/release`, SERVICE).send({ reason: "t" }).expect(200);

  const books = new BooksCheckService(h.db);
  const clean = await books.run();
  expect(clean.discrepancies).toEqual([]);
  expect(clean.holds).toMatchObject({ active: 1, settled: 1, released: 1 });
  const org = clean.organizations.find((o) => o.organization_id === a.organizationId)!;
  expect(org).toMatchObject({ credits_microrub: 50_000, settled_microrub: 4_000, active_holds_microrub: 5_000, available_microrub: 41_000 });

  // Money appearing from nowhere: the balance no longer equals credits - settled.
  await h.db.$executeRaw`UPDATE organizations SET balance = balance + 1 WHERE id = ${a.organizationId}::uuid`;
  const broken = await books.run();
  expect(broken.discrepancies.some((d) => d.includes("credits") && d.includes("!= balance"))).toBe(true);
  await h.db.$executeRaw`UPDATE organizations SET balance = balance - 1 WHERE id = ${a.organizationId}::uuid`;

  // A reservation the holds do not explain.
  await h.db.$executeRaw`UPDATE key_daily_usage SET reserved = reserved + 7 WHERE key_id = ${a.keyId}::uuid`;
  expect((await books.run()).discrepancies.some((d) => d.includes(`key ${a.keyId}`))).toBe(true);
  await h.db.$executeRaw`UPDATE key_daily_usage SET reserved = reserved - 7 WHERE key_id = ${a.keyId}::uuid`;

  expect((await books.run()).discrepancies).toEqual([]);
});

it("the database itself refuses to reserve beyond the balance or to rewrite the ledger", async () => {
  const a = await seedAccount(h, { credit: 100 });
  await expect(h.db.$executeRaw`UPDATE organizations SET reserved = 101 WHERE id = ${a.organizationId}::uuid`).rejects.toThrow();
  await expect(h.db.$executeRaw`UPDATE ledger_entries SET amount = 1 WHERE organization_id = ${a.organizationId}::uuid`).rejects.toThrow();
});
