import path from "node:path";
import { randomUUID } from "node:crypto";
import request from "supertest";
import type { Express } from "express";
import { createTestDatabase, createTestVhost, moneyPathSettings, signedCall, testGrantKeys, testKeyEnv } from "@meter/testing";
import { createLogger, type Metrics } from "@meter/service-kit";
import { BillingEndpoints, type Deployable, type HoldOp, type HoldOpsResponse, type Identity, type Scope } from "@meter/contracts";
import type { BillingServices } from "../../src/composition";
import { compose, type BillingOverrides } from "../../src/composition";
import { loadConfig } from "../../src/config";
import { createDatabase, type BillingDatabase as Database, type Db } from "../../src/db";
import { BooksCheckService, formatBooksReport } from "../../src/accounts/books-check.service";
import { BooksRepository } from "../../src/accounts/books.repository";
import { GrantSignatures } from "../../src/holds/grant-signatures";

export const SERVICE_DIR = path.resolve(__dirname, "../..");
/** What the test's own connections call themselves (application_name). */
const TEST_SESSION = "billing-ledger-test";

export interface BillingHarness {
  url: string;
  /**
   * The test's own client of the database (for fixtures and reads), apart from billing's: its sessions
   * are not named billing-ledger, so the money-path check does not count what a test writes by hand.
   */
  db: Db;
  /** billing's own database (its pool and Prisma client, as its code uses them). */
  database: Database;
  app: Express;
  services: BillingServices;
  metrics: Metrics;
  /**
   * A supertest call signed with the given identity (admin by default) and body, as the gateway (or,
   * for a service identity, that service) would sign it.
   */
  call(method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE", path: string, identity?: Identity, body?: unknown): request.Test;
  /** Runs the books check and fails the test on any discrepancy. */
  assertBooksBalance(): Promise<void>;
  close(): Promise<void>;
}

/**
 * billing-ledger as its composition root builds it, on a fresh database and vhost: its HTTP app (for
 * supertest), its rules and its database, with the bus, hold commands, expiry sweep and audit running.
 */
export async function startBilling(
  opts: { timezone?: string; lockTimeoutMs?: number; env?: Record<string, string> } & Pick<BillingOverrides, "clock" | "holdAttempts" | "owners"> = {},
): Promise<BillingHarness> {
  const [database, vhost] = await Promise.all([createTestDatabase(SERVICE_DIR), createTestVhost()]);
  const composition = await compose(
    loadConfig({
      ...testKeyEnv("billing-ledger"),
      BILLING_LEDGER_DATABASE_URL: database.url,
      RABBITMQ_URL: vhost.url,
      DATABASE_POOL_SIZE: "20",
      BUDGET_TIMEZONE: opts.timezone ?? "UTC",
      ...moneyPathSettings(),
      ...(opts.lockTimeoutMs !== undefined ? { HOLD_LOCK_TIMEOUT_MS: String(opts.lockTimeoutMs) } : {}),
      ...opts.env,
    }),
    {
      logger: createLogger("billing-ledger-test", "silent"),
      ...(opts.clock ? { clock: opts.clock } : {}),
      ...(opts.holdAttempts !== undefined ? { holdAttempts: opts.holdAttempts } : {}),
      ...(opts.owners ? { owners: opts.owners } : {}),
    },
  );
  const { app, services, metrics } = composition;
  const handle = composition.database;
  const fixtures = createDatabase(database.url, 4, undefined, TEST_SESSION);
  const db = fixtures.prisma;
  const call = (method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE", p: string, identity: Identity = { kind: "admin" }, body?: unknown) => {
    const agent = request(app);
    const t =
      method === "GET"
        ? agent.get(p)
        : method === "POST"
          ? agent.post(p)
          : method === "PUT"
            ? agent.put(p)
            : method === "PATCH"
              ? agent.patch(p)
              : agent.delete(p);
    const signer: Deployable = identity.kind === "service" ? (identity.service as Deployable) : "gateway";
    const { headers, payload } = signedCall(signer, "billing-ledger", identity, method, p, body);
    t.set(headers);
    return payload === undefined ? t : t.send(payload);
  };
  return {
    url: database.url,
    db,
    database: handle,
    app,
    services,
    metrics,
    call,
    async assertBooksBalance() {
      const report = await new BooksCheckService(new BooksRepository(db)).run();
      if (report.discrepancies.length > 0) throw new Error(formatBooksReport(report, database.url));
    },
    async close() {
      await composition.close();
      await fixtures.close();
      await database.drop();
      await vhost.drop();
    },
  };
}

export const SERVICE: Identity = { kind: "service", service: "text" };

/** How the suite's billing commits a batch (a money suite runs as on Citus): for services a test builds itself. */
export function suiteHoldBatchTransactions(): "batch" | "organization" {
  return moneyPathSettings().HOLD_BATCH_TRANSACTIONS === "organization" ? "organization" : "batch";
}

/** billing's grant signatures with the test process's grant key (what every billing of the test signs with) and the default hold expiry. */
export function testGrants(): GrantSignatures {
  return new GrantSignatures(testGrantKeys(), 72 * 3_600_000);
}

/** A user in an organization with credit and a key; amounts in microrubles. */
export async function seedAccount(
  h: BillingHarness,
  opts: { credit?: number; dailyBudget?: number; scopes?: Scope[] } = {},
): Promise<{ userId: string; organizationId: string; keyId: string; key: string }> {
  const admin = { kind: "admin" } as const;
  const user = await h.call("POST", "/admin/v1/users", admin, { email: `u-${randomUUID()}@example.test` }).expect(201);
  const org = await h.call("POST", "/admin/v1/organizations", admin, { name: `org-${randomUUID().slice(0, 8)}` }).expect(201);
  await h.call("POST", `/admin/v1/organizations/${org.body.id}/members`, admin, { user_id: user.body.id }).expect(201);
  if (opts.credit) {
    await h
      .call("POST", `/admin/v1/organizations/${org.body.id}/credits`, admin, { amount_microrub: opts.credit, reference: `seed-${randomUUID()}` })
      .expect(201);
  }
  const key = await h
    .call("POST", "/admin/v1/keys", admin, {
      user_id: user.body.id,
      organization_id: org.body.id,
      scopes: opts.scopes ?? ["text", "images", "files:write", "files:read", "mcp:read", "mcp:invoke"],
      daily_budget_microrub: opts.dailyBudget ?? 1_000_000_000,
    })
    .expect(201);
  return { userId: user.body.id, organizationId: org.body.id, keyId: key.body.id, key: key.body.key };
}

/** What text sends to `POST /internal/v1/hold-ops` for one request, minus what a test does not care about. */
export function placeOp(keyId: string, amount: number, holdId: string = randomUUID()): HoldOp & { op: "place" } {
  return { op: "place", hold_id: holdId, key_id: keyId, amount_microrub: amount, operation: "text", model: "m", source: "text", owner_ref: `req-${holdId}` };
}

/**
 * Hold operations as a holder service sends them (`POST /internal/v1/hold-ops`, signed as text): one op
 * per call, answered like a single-op endpoint would (the hold, or the op's error as the HTTP status).
 */
export function holdCalls(h: BillingHarness) {
  const one = async (op: HoldOp): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await h.call("POST", BillingEndpoints.holdOps.path, SERVICE, { ops: [op] }).expect(200);
    const [result] = (res.body as HoldOpsResponse).results;
    if (!result) throw new Error("hold-ops answered no result");
    return result.ok ? { status: 200, body: result.hold } : { status: result.error.status, body: { error: result.error } };
  };
  return {
    place: (keyId: string, amount: number, holdId?: string) => one(placeOp(keyId, amount, holdId)),
    settle: (holdId: string, amount: number) => one({ op: "settle", hold_id: holdId, amount_microrub: amount }),
    release: (holdId: string, reason = "test", organizationId?: string) =>
      one({ op: "release", hold_id: holdId, reason, ...(organizationId === undefined ? {} : { organization_id: organizationId }) }),
  };
}

/** Polls until `check` holds (no fixed sleeps in tests). */
export async function until(check: () => Promise<boolean> | boolean, ms = 15_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The current value of a counter (summed over the given labels' match) in a Metrics registry. */
export async function counterValue(metrics: Metrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = metrics.registry.getSingleMetric(name);
  if (!metric) return 0;
  const { values } = await metric.get();
  return values
    .filter((v) => Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want))
    .reduce((sum, v) => sum + v.value, 0);
}
