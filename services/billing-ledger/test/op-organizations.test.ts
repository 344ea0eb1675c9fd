import { randomUUID } from "node:crypto";
import { Pool } from "pg";
import { OpOrganizations } from "../src/holds/op-organizations";
import type { LedgerOp } from "../src/holds/hold-ops.repository";
import { KeyOrganizations } from "../src/keys/key-organizations";
import { placeOp, seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

/**
 * Whose money each op of a batch moves decides which organization's transaction it runs in
 * (HOLD_BATCH_TRANSACTIONS=organization, docs/scale.md). A wrong answer runs an op where its hold is
 * not: it would find nothing, and a settlement would be lost as `unknown`.
 */
let h: BillingHarness;
let pool: Pool;
/** Every query the classes under test send. */
const queries: string[] = [];
const counted = (): Pool =>
  ({
    query: (sql: string, values: unknown[]) => {
      queries.push(sql);
      return pool.query(sql, values);
    },
  }) as unknown as Pool;

beforeAll(async () => {
  h = await startBilling();
  pool = new Pool({ connectionString: h.url, max: 2 });
});
afterAll(async () => {
  await pool.end();
  await h.assertBooksBalance();
  await h.close();
});

const settle = (holdId: string): LedgerOp => ({ op: "settle", hold_id: holdId, amount_microrub: 100, source: "text" });
const release = (holdId: string, organizationId?: string): LedgerOp => ({
  op: "release",
  hold_id: holdId,
  reason: "cancelled",
  source: "text",
  ...(organizationId ? { organization_id: organizationId } : {}),
});

describe("OpOrganizations", () => {
  test("an op goes with its own organization, its key's, an earlier placement's in the batch, or its hold's, in that order", async () => {
    const [a, b] = await Promise.all([seedAccount(h, { credit: 100_000 }), seedAccount(h, { credit: 100_000 })]);
    const placedBefore = placeOp(b!.keyId, 1_000);
    expect(await h.services.holds.apply([placedBefore])).toEqual([expect.objectContaining({ outcome: "placed" })]);
    const organizations = new OpOrganizations(pool, new KeyOrganizations(pool));

    const madeHere = placeOp(a!.keyId, 1_000);
    const madeLater = placeOp(b!.keyId, 1_000);
    const batch: LedgerOp[] = [
      settle(placedBefore.hold_id), // a hold billing has: its organization (b)
      release(madeLater.hold_id), // before the batch places it: not the later placement's
      madeHere, // its key's (a)
      settle(madeHere.hold_id), // after its placement in the batch: the placement's (a)
      madeLater, // its key's (b)
      release(randomUUID(), a!.organizationId), // a tombstone names its organization (a)
      settle(randomUUID()), // nothing tells: no organization
    ];
    expect(await organizations.of(batch)).toEqual([b!.organizationId, null, a!.organizationId, a!.organizationId, b!.organizationId, a!.organizationId, null]);
  });

  test("an op that names an organization is not looked up, and one on a hold placed in the batch reads no hold", async () => {
    const a = await seedAccount(h, { credit: 100_000 });
    const place = placeOp(a.keyId, 1_000);
    const organizations = new OpOrganizations(counted(), new KeyOrganizations(counted()));
    queries.length = 0;
    expect(await organizations.of([place, settle(place.hold_id), release(randomUUID(), a.organizationId)])).toEqual([
      a.organizationId,
      a.organizationId,
      a.organizationId,
    ]);
    // One read of the key's organization; no read of holds.
    expect(queries).toEqual([expect.stringContaining("api_key_hashes")]);
  });
});

describe("KeyOrganizations", () => {
  test("remembers what it read, and past its size starts over without losing the keys of the call", async () => {
    const accounts = await Promise.all(Array.from({ length: 3 }, () => seedAccount(h, { credit: 1_000 })));
    const keys = new KeyOrganizations(counted(), 2);
    const expected = new Map(accounts.map((a) => [a.keyId, a.organizationId]));

    queries.length = 0;
    expect(await keys.of(accounts.slice(0, 2).map((a) => a.keyId))).toEqual(new Map(accounts.slice(0, 2).map((a) => [a.keyId, a.organizationId])));
    expect(await keys.of(accounts.slice(0, 2).map((a) => a.keyId.toUpperCase()))).toEqual(
      new Map(accounts.slice(0, 2).map((a) => [a.keyId, a.organizationId])),
    );
    expect(queries).toHaveLength(1);

    // A third key does not fit: the memory starts over, and this call still answers every key it asked.
    expect(await keys.of(accounts.map((a) => a.keyId))).toEqual(expected);
    expect(queries).toHaveLength(2);
    expect(await keys.of(accounts.map((a) => a.keyId))).toEqual(expected);
  });

  test("finds a key an older release made without its api_key_hashes row; a key billing lacks is absent", async () => {
    const a = await seedAccount(h, { credit: 1_000 });
    await pool.query("DELETE FROM api_key_hashes WHERE key_id = $1", [a.keyId]);
    const unknown = randomUUID();
    expect(await new KeyOrganizations(pool).of([a.keyId, unknown])).toEqual(new Map([[a.keyId, a.organizationId]]));
  });
});
