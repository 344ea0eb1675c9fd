import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { backupDatabase, LOCAL_MODEL, restoreDatabase, startSystemUnderTest, type SystemUnderTest, type TestAccount } from "@meter/testing";

/**
 * The backup drill (docs/deploy.md, "Backups"): paid traffic, a dump of one service's database, more
 * paid traffic, the database restored from the dump, then the books cross-check. Afterwards the
 * balance is the credit minus every charge a client was told of, and the cross-check is clean.
 */
let sut: SystemUnderTest;
let dir: string;
beforeAll(async () => {
  // The periodic cross-check stays out of the way: each drill runs it by hand, as an operator does.
  sut = await startSystemUnderTest({ env: { BOOKS_CROSS_CHECK_INTERVAL_MS: "3600000" } });
  dir = await mkdtemp(path.join(tmpdir(), "meter-restore-drill-"));
}, 120_000);
afterAll(async () => {
  await sut.close();
  await rm(dir, { recursive: true, force: true });
});

interface CrossCheckReport {
  owners: { source: string; compared: number; unreachable: boolean; restored_at: string | null; lost_in_restore: number }[];
  differences: { source: string; kind: string; hold_id: string; repaired: boolean }[];
}

const CREDIT = 50_000_000;

/** `count` paid requests, one after another; returns what the clients were told they were charged. */
async function paidRequests(account: TestAccount, count: number): Promise<number> {
  let charged = 0;
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${sut.url}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json", "idempotency-key": randomUUID() },
      body: JSON.stringify({ model: LOCAL_MODEL, max_tokens: 50, messages: [{ role: "user", content: `drill ${i}` }] }),
    });
    const body = (await res.json()) as { billing: { status: string; cost_microrub: number } };
    expect(res.status).toBe(200);
    expect(body.billing.status).toBe("settled");
    charged += body.billing.cost_microrub;
  }
  return charged;
}

/** Waits until billing has applied every settlement the text service handed off. */
async function settled(account: TestAccount, balance: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await balanceOf(account)).balance_microrub !== balance) {
    if (Date.now() > deadline) throw new Error(`balance never reached ${balance}: ${JSON.stringify(await balanceOf(account))}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function balanceOf(account: TestAccount) {
  return sut.admin<{ balance_microrub: number; reserved_microrub: number }>("GET", `/admin/v1/organizations/${account.organizationId}/balance`);
}

function crossCheck(): Promise<CrossCheckReport> {
  return sut.admin<CrossCheckReport>("POST", "/admin/v1/books/cross-check", {});
}

/** The text service's side of a report: the drills run without media-jobs, which cannot be asked. */
function textOf(report: CrossCheckReport) {
  return {
    owner: report.owners.find((o) => o.source === "text"),
    differences: report.differences.filter((d) => d.source === "text"),
  };
}

it("billing-ledger's database restored from a dump: the lost charges are recovered from text's records, once", async () => {
  const account = await sut.account({ credit: CREDIT, dailyBudget: CREDIT });
  const before = await paidRequests(account, 15);
  await settled(account, CREDIT - before);

  const dump = path.join(dir, "billing-ledger.dump");
  await backupDatabase(sut.env.BILLING_LEDGER_DATABASE_URL!, dump);
  const after = await paidRequests(account, 15);
  await settled(account, CREDIT - before - after);

  await sut.system.kill("billing-ledger", "SIGTERM");
  await restoreDatabase(sut.env.BILLING_LEDGER_DATABASE_URL!, dump);
  await sut.system.start("billing-ledger");
  // What the issue saw: the second charges are gone from billing's books, and its own check cannot tell.
  expect(await balanceOf(account)).toMatchObject({ balance_microrub: CREDIT - before, reserved_microrub: 0 });

  const repair = textOf(await crossCheck());
  expect(repair.owner).toMatchObject({ compared: 30, unreachable: false, restored_at: null });
  expect(repair.differences).toHaveLength(15);
  for (const d of repair.differences) expect(d).toMatchObject({ kind: "missing_at_billing", repaired: true });
  expect(await balanceOf(account)).toMatchObject({ balance_microrub: CREDIT - before - after, reserved_microrub: 0 });

  // However often it runs, nothing is charged twice, and the books are clean both ways.
  const again = textOf(await crossCheck());
  expect(again.differences).toEqual([]);
  expect(await balanceOf(account)).toMatchObject({ balance_microrub: CREDIT - before - after, reserved_microrub: 0 });
  const usage = await sut.admin<{ spent_microrub: number }>("GET", `/admin/v1/keys/${account.keyId}/usage`);
  expect(usage.spent_microrub).toBe(before + after);
  const books = sut.booksCheck();
  expect(books.output).toMatch(/OK: the books balance/);
  expect(books.ok).toBe(true);
}, 240_000);

it("text's database restored from a dump: billing's charges stand, nothing is released, the cross-check is clean", async () => {
  const account = await sut.account({ credit: CREDIT, dailyBudget: CREDIT });
  const before = await paidRequests(account, 10);
  await settled(account, CREDIT - before);

  const dump = path.join(dir, "text.dump");
  await backupDatabase(sut.env.TEXT_DATABASE_URL!, dump);
  const after = await paidRequests(account, 10);
  await settled(account, CREDIT - before - after);

  await sut.system.kill("text", "SIGTERM");
  await restoreDatabase(sut.env.TEXT_DATABASE_URL!, dump);
  await sut.system.start("text");

  // Text lost the second ten records; billing's settled holds of them survive, charged once each.
  const report = textOf(await crossCheck());
  expect(report.owner).toMatchObject({ unreachable: false, lost_in_restore: 10 });
  expect(report.owner!.restored_at).not.toBeNull();
  expect(report.differences).toEqual([]);
  expect(await balanceOf(account)).toMatchObject({ balance_microrub: CREDIT - before - after, reserved_microrub: 0 });
  expect(textOf(await crossCheck()).differences).toEqual([]);
  expect(await balanceOf(account)).toMatchObject({ balance_microrub: CREDIT - before - after, reserved_microrub: 0 });
  expect(sut.booksCheck().ok).toBe(true);
}, 240_000);
