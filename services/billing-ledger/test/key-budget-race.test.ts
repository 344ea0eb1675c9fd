import { randomUUID } from "node:crypto";
import { ApiKeyRepository, type OpenAllowance } from "../src/keys/api-key.repository";
import { ApiKeyService } from "../src/keys/api-key.service";
import { seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

let h: BillingHarness;
beforeAll(async () => {
  h = await startBilling();
});
afterAll(async () => {
  await h.close();
});

describe("two budget edits of one key at once", () => {
  it("the later one lowers what the earlier one set, so it calls the key's allowances back", async () => {
    const a = await seedAccount(h, { credit: 10_000_000, dailyBudget: 100_000 });
    const allowance = randomUUID();
    const [granted] = await h.services.holds.apply([
      {
        op: "grant",
        hold_id: allowance,
        key_id: a.keyId,
        amount_microrub: 20_000,
        min_microrub: 1_000,
        operation: "text",
        source: "text",
        owner_ref: `a-${allowance}`,
      },
    ]);
    expect(granted).toMatchObject({ outcome: "granted" });
    const recalled: OpenAllowance[][] = [];
    const keys = new ApiKeyService(new ApiKeyRepository(h.database.prisma), async (allowances) => {
      recalled.push(allowances);
    });

    // Edit A raises 100,000 to 200,000 and holds the key's row while edit B (150,000) arrives: B waits
    // for A, and then lowers A's budget. Allowances granted under 200,000 must not outlive it.
    let editB: Promise<unknown> | undefined;
    await h.db.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT 1 FROM api_keys WHERE id = ${a.keyId}::uuid FOR NO KEY UPDATE`;
      await tx.$executeRaw`UPDATE api_keys SET daily_budget = 200000 WHERE id = ${a.keyId}::uuid`;
      editB = keys.update(a.keyId, { daily_budget_microrub: 150_000 });
      await new Promise((r) => setTimeout(r, 500));
      expect(recalled).toEqual([]);
    });
    await expect(editB).resolves.toMatchObject({ daily_budget_microrub: 150_000 });
    expect(recalled).toEqual([[{ id: allowance, source: "text" }]]);

    // Raised again: nothing to call back.
    await keys.update(a.keyId, { daily_budget_microrub: 300_000 });
    expect(recalled).toHaveLength(1);
    await h.services.holds.apply([{ op: "release", hold_id: allowance, reason: "idle", used_microrub: 0, source: "text" }]);
    await h.assertBooksBalance();
  });
});
