import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client } from "pg";
import { backupDatabase, LOCAL_MODEL, restoreDatabase, signedCall, startSystemUnderTest, type SystemUnderTest, type TestAccount } from "@meter/testing";

/**
 * The backup drill (docs/deploy.md, "Backups"): paid traffic, a dump of one service's database, more
 * paid traffic, the database restored from the dump, then the books cross-check. Afterwards the
 * balance is the credit minus every charge a client was told of, and the cross-check is clean.
 */
let sut: SystemUnderTest;
let dir: string;
beforeAll(async () => {
  // The periodic cross-check stays out of the way: each drill runs it by hand, as an operator does.
  // The hold audit asks about any hold active for a second.
  // Allowances on (the default), sized for a minute of spend and kept through 20 s of quiet, so an
  // allowance billing grants after its backup is still the text service's when billing is restored.
  sut = await startSystemUnderTest({
    env: {
      BOOKS_CROSS_CHECK_INTERVAL_MS: "3600000",
      HOLD_AUDIT_AFTER_MS: "1000",
      HOLD_AUDIT_INTERVAL_MS: "500",
      ALLOWANCE_SECONDS: "60",
      ALLOWANCE_IDLE_MS: "20000",
    },
  });
  dir = await mkdtemp(path.join(tmpdir(), "meter-restore-drill-"));
}, 120_000);
afterAll(async () => {
  await sut.close();
  await rm(dir, { recursive: true, force: true });
});

interface CrossCheckReport {
  owners: { source: string; compared: number; unreachable: boolean; restored_at: string | null; lost_in_restore: number }[];
  differences: {
    source: string;
    kind: string;
    hold_id: string;
    repaired: boolean;
    owner?: { final_at: string; allowance?: { allowance_id: string } | null };
  }[];
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
  await until(
    async () => (await balanceOf(account)).balance_microrub === balance,
    30_000,
    async () => `balance never reached ${balance}: ${JSON.stringify(await balanceOf(account))}`,
  );
}

/** Waits until the text service has returned every allowance of the account (it was idle long enough). */
async function returned(account: TestAccount): Promise<void> {
  await until(
    async () => (await balanceOf(account)).reserved_microrub === 0,
    60_000,
    async () => `allowances never returned: ${JSON.stringify(await balanceOf(account))}`,
  );
}

async function until(check: () => Promise<boolean>, ms: number, what: () => Promise<string>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(await what());
    await new Promise((r) => setTimeout(r, 200));
  }
}

function balanceOf(account: TestAccount) {
  return sut.admin<{ balance_microrub: number; reserved_microrub: number }>("GET", `/admin/v1/organizations/${account.organizationId}/balance`);
}

/** A hold placed as the text service would, for a text request `ownerRef`. */
async function placeAsText(account: TestAccount, ownerRef: string): Promise<string> {
  const holdId = randomUUID();
  const op = {
    op: "place",
    hold_id: holdId,
    key_id: account.keyId,
    amount_microrub: 1_000,
    operation: "text",
    model: LOCAL_MODEL,
    source: "text",
    owner_ref: ownerRef,
  };
  const { headers, payload } = signedCall("text", "billing-ledger", { kind: "service", service: "text" }, "POST", "/internal/v1/hold-ops", { ops: [op] });
  const res = await fetch(`${sut.system.urls["billing-ledger"]}/internal/v1/hold-ops`, { method: "POST", headers, body: payload! });
  expect(((await res.json()) as { results: { ok: boolean }[] }).results[0]).toMatchObject({ ok: true });
  return holdId;
}

async function holdStatus(holdId: string): Promise<string | undefined> {
  const holds = await sut.admin<{ data: { hold_id: string; status: string }[] }>("GET", "/admin/v1/holds?source=text&limit=500");
  return holds.data.find((h) => h.hold_id === holdId)?.status;
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

it("billing-ledger's database restored, allowances on: every charge told is in the ledger once, and text stops using the allowances billing lost", async () => {
  const account = await sut.account({ credit: CREDIT, dailyBudget: CREDIT });
  const before = await paidRequests(account, 200);
  await settled(account, CREDIT - before);
  // Its allowances returned, so that those of the next requests are granted after the backup.
  await returned(account);

  const dump = path.join(dir, "billing-ledger.dump");
  await backupDatabase(sut.env.BILLING_LEDGER_DATABASE_URL!, dump);
  const after = await paidRequests(account, 200);
  await settled(account, CREDIT - before - after);

  await sut.system.kill("billing-ledger", "SIGTERM");
  await restoreDatabase(sut.env.BILLING_LEDGER_DATABASE_URL!, dump);
  await sut.system.start("billing-ledger");
  // What the issue saw: the second charges are gone from billing's books, with the allowances they were placed on.
  expect(await balanceOf(account)).toMatchObject({ balance_microrub: CREDIT - before, reserved_microrub: 0 });

  // Traffic goes on, first on the allowance the text service still holds and billing no longer has.
  const meanwhile = await paidRequests(account, 100);
  const first = textOf(await crossCheck());
  const toldAt = new Date();
  expect(first.owner).toMatchObject({ unreachable: false, restored_at: null });
  expect(first.differences.length).toBeGreaterThan(0);
  for (const d of first.differences) expect(d).toMatchObject({ kind: "missing_at_billing", repaired: true });
  // Told by the cross-check, text places nothing more on an allowance billing lost: every later request's
  // own command charges it (none is recovered), on a new grant or a hold billing has.
  const later = await paidRequests(account, 100);
  const total = before + after + meanwhile + later;

  // Requests on an allowance billing still had (granted before the backup) are left to their commands for
  // a minute, then repaired as those commands: the operator runs the cross-check until the books agree.
  const recoveredLater: CrossCheckReport["differences"] = [];
  await until(
    async () => {
      const pass = textOf(await crossCheck());
      for (const d of pass.differences) expect(d).toMatchObject({ kind: "missing_at_billing", repaired: true });
      recoveredLater.push(...pass.differences);
      return (await balanceOf(account)).balance_microrub === CREDIT - total;
    },
    120_000,
    async () => `balance never reached ${CREDIT - total}: ${JSON.stringify(await balanceOf(account))}`,
  );
  for (const d of recoveredLater) expect(new Date(d.owner!.final_at).getTime()).toBeLessThan(toldAt.getTime());

  // However often it runs, nothing is charged twice, and the books are clean both ways.
  expect(textOf(await crossCheck()).differences).toEqual([]);
  expect(await balanceOf(account)).toMatchObject({ balance_microrub: CREDIT - total });
  const usage = await sut.admin<{ spent_microrub: number }>("GET", `/admin/v1/keys/${account.keyId}/usage`);
  expect(usage.spent_microrub).toBe(total);
  const books = sut.booksCheck();
  expect(books.output).toMatch(/OK: the books balance/);
  expect(books.ok).toBe(true);
}, 600_000);

it("text's database restored, allowances on: billing's charges stand, its allowances the text service lost are returned, the cross-check is clean", async () => {
  const account = await sut.account({ credit: CREDIT, dailyBudget: CREDIT });
  const before = await paidRequests(account, 200);
  await settled(account, CREDIT - before);

  const dump = path.join(dir, "text.dump");
  await backupDatabase(sut.env.TEXT_DATABASE_URL!, dump);
  const after = await paidRequests(account, 200);
  await settled(account, CREDIT - before - after);

  // A crash: the allowances text holds stay reserved at billing, and the restore loses its record of them.
  await sut.system.kill("text", "SIGKILL");
  // A hold whose request text is about to lose in the restore (it may have been delivered): placed
  // while text is down, so the hold audit cannot ask about it before the restore.
  const other = await sut.account({ credit: CREDIT, dailyBudget: CREDIT });
  const lost = await placeAsText(other, randomUUID());
  await restoreDatabase(sut.env.TEXT_DATABASE_URL!, dump);
  await sut.system.start("text");

  // Text lost the second 200 records; billing's settled holds of them survive, charged once each, and
  // the hold audit returns what the allowances text no longer knows still reserved.
  await returned(account);
  const report = textOf(await crossCheck());
  expect(report.owner).toMatchObject({ unreachable: false, lost_in_restore: 200 });
  expect(report.owner!.restored_at).not.toBeNull();
  expect(report.differences).toEqual([]);
  expect(await balanceOf(account)).toMatchObject({ balance_microrub: CREDIT - before - after, reserved_microrub: 0 });

  // Traffic goes on, on new grants.
  const later = await paidRequests(account, 200);
  await settled(account, CREDIT - before - after - later);
  expect(textOf(await crossCheck()).differences).toEqual([]);
  expect(await balanceOf(account)).toMatchObject({ balance_microrub: CREDIT - before - after - later });
  const usage = await sut.admin<{ spent_microrub: number }>("GET", `/admin/v1/keys/${account.keyId}/usage`);
  expect(usage.spent_microrub).toBe(before + after + later);

  // The hold audit: a hold no text request holds is released when it is younger than text's restore
  // point, but one older than it (its record may be among those lost) stays as it is, for a person.
  const stray = await placeAsText(other, randomUUID());
  const deadline = Date.now() + 30_000;
  while ((await holdStatus(stray)) === "active") {
    if (Date.now() > deadline) throw new Error("the hold audit never released the stray hold");
    await new Promise((r) => setTimeout(r, 250));
  }
  expect(await holdStatus(stray)).toBe("released");
  expect(await holdStatus(lost)).toBe("active");
  expect(await balanceOf(other)).toMatchObject({ balance_microrub: CREDIT, reserved_microrub: 1_000 });
  expect(sut.booksCheck().ok).toBe(true);
}, 600_000);

it("rows a compromised text writes into its own database move nothing: the cross-check reports them for a person", async () => {
  const victim = await sut.account({ credit: CREDIT, dailyBudget: CREDIT });
  const attacker = await sut.account({ credit: CREDIT, dailyBudget: CREDIT });
  // A media-jobs job's hold, still active.
  const job = randomUUID();
  const op = {
    op: "place",
    hold_id: job,
    key_id: victim.keyId,
    amount_microrub: 50_000,
    operation: "image_edit",
    model: LOCAL_MODEL,
    source: "media-jobs",
    owner_ref: job,
  };
  const call = signedCall("media-jobs", "billing-ledger", { kind: "service", service: "media-jobs" }, "POST", "/internal/v1/hold-ops", { ops: [op] });
  const placed = await fetch(`${sut.system.urls["billing-ledger"]}/internal/v1/hold-ops`, { method: "POST", headers: call.headers, body: call.payload! });
  expect(((await placed.json()) as { results: { ok: boolean }[] }).results[0]).toMatchObject({ ok: true });

  // Final records as text lists them: settling media-jobs' hold; charging the victim's organization
  // through the attacker's key; charging far more than the estimate.
  const forged = [
    { id: randomUUID(), holdId: job, organization: victim.organizationId, key: victim.keyId, estimate: 50_000, cost: 50_000 },
    { id: randomUUID(), holdId: randomUUID(), organization: victim.organizationId, key: attacker.keyId, estimate: 500_000, cost: 500_000 },
    { id: randomUUID(), holdId: randomUUID(), organization: attacker.organizationId, key: attacker.keyId, estimate: 1_000, cost: 900_000 },
  ];
  const text = new Client({ connectionString: sut.env.TEXT_DATABASE_URL! });
  await text.connect();
  try {
    for (const r of forged) {
      await text.query(
        `INSERT INTO text_requests (id, key_id, user_id, organization_id, endpoint, idempotency_key, fingerprint, model, plan, estimated_cost,
                                    hold_id, state, cost, created_at, updated_at, completed_at)
         VALUES ($1::uuid, $2, $3, $4, 'messages', $1::text, 'f', $5, '{}', $6, $7, 'completed', $8, now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour')`,
        [r.id, r.key, randomUUID(), r.organization, LOCAL_MODEL, r.estimate, r.holdId, r.cost],
      );
    }
    const report = await sut.admin<CrossCheckReport & { differences: { rejected?: string }[] }>("POST", "/admin/v1/books/cross-check", { repair: true });
    const found = Object.fromEntries(report.differences.filter((d) => forged.some((r) => r.holdId === d.hold_id)).map((d) => [d.hold_id, d]));
    expect(found).toEqual({
      [forged[0]!.holdId]: expect.objectContaining({ kind: "rejected_owner_claim", rejected: "foreign_hold", repaired: false }),
      [forged[1]!.holdId]: expect.objectContaining({ kind: "rejected_owner_claim", rejected: "key_not_of_organization", repaired: false }),
      [forged[2]!.holdId]: expect.objectContaining({ kind: "rejected_owner_claim", rejected: "settled_over_estimate", repaired: false }),
    });
    // Nothing moved: media-jobs' hold is as it was, and neither organization was charged.
    expect(await balanceOf(victim)).toMatchObject({ balance_microrub: CREDIT, reserved_microrub: 50_000 });
    expect(await balanceOf(attacker)).toMatchObject({ balance_microrub: CREDIT, reserved_microrub: 0 });
    const holds = await sut.admin<{ data: { hold_id: string; status: string }[] }>("GET", "/admin/v1/holds?source=media-jobs&limit=500");
    expect(holds.data.find((h) => h.hold_id === job)).toMatchObject({ status: "active" });
    expect(sut.booksCheck().ok).toBe(true);
  } finally {
    await text.query("DELETE FROM text_requests WHERE id = ANY($1::uuid[])", [forged.map((r) => r.id)]);
    await text.end();
  }
}, 240_000);
