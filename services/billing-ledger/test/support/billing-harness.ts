import path from "node:path";
import { randomUUID } from "node:crypto";
import request from "supertest";
import type { Express } from "express";
import { createTestDatabase } from "@meter/testing";
import { createLogger, Metrics, signIdentity } from "@meter/service-kit";
import type { Identity, Scope } from "@meter/contracts";
import { createApp, createBillingServices, type BillingServices } from "../../src/app";
import { createDatabase, type Db } from "../../src/db";
import { BooksCheckService, formatBooksReport } from "../../src/services/books-check.service";

export const SERVICE_DIR = path.resolve(__dirname, "../..");
export const TEST_SECRET = "test-internal-secret-0123456789";

export interface BillingHarness {
  url: string;
  db: Db;
  app: Express;
  services: BillingServices;
  /** A supertest call signed with the given identity (admin by default). */
  call(method: "GET" | "POST" | "PUT" | "DELETE", path: string, identity?: Identity): request.Test;
  /** Runs the books check and fails the test on any discrepancy. */
  assertBooksBalance(): Promise<void>;
  close(): Promise<void>;
}

export async function startBilling(opts: { timezone?: string } = {}): Promise<BillingHarness> {
  const database = await createTestDatabase(SERVICE_DIR);
  const handle = createDatabase(database.url, 20);
  const db = handle.prisma;
  const services = createBillingServices(handle, opts.timezone ?? "UTC");
  const app = createApp({
    internalSecret: TEST_SECRET,
    logger: createLogger("billing-ledger-test", "silent"),
    metrics: new Metrics("billing-ledger"),
    services,
    readiness: [],
  });
  const call = (method: "GET" | "POST" | "PUT" | "DELETE", p: string, identity: Identity = { kind: "admin" }) => {
    const agent = request(app);
    const t = method === "GET" ? agent.get(p) : method === "POST" ? agent.post(p) : method === "PUT" ? agent.put(p) : agent.delete(p);
    return t.set(signIdentity(TEST_SECRET, identity, method, p));
  };
  return {
    url: database.url,
    db,
    app,
    services,
    call,
    async assertBooksBalance() {
      const report = await new BooksCheckService(db).run();
      if (report.discrepancies.length > 0) throw new Error(formatBooksReport(report, database.url));
    },
    async close() {
      await handle.close();
      await database.drop();
    },
  };
}

export const SERVICE: Identity = { kind: "service", service: "test" };

/** A user in an organization with credit and a key; amounts in microrubles. */
export async function seedAccount(
  h: BillingHarness,
  opts: { credit?: number; dailyBudget?: number; scopes?: Scope[] } = {},
): Promise<{ userId: string; organizationId: string; keyId: string; key: string }> {
  const user = await h.call("POST", "/admin/v1/users").send({ email: `u-${randomUUID()}@example.test` }).expect(201);
  const org = await h.call("POST", "/admin/v1/organizations").send({ name: `org-${randomUUID().slice(0, 8)}` }).expect(201);
  await h.call("POST", `/admin/v1/organizations/${org.body.id}/members`).send({ user_id: user.body.id }).expect(201);
  if (opts.credit) {
    await h
      .call("POST", `/admin/v1/organizations/${org.body.id}/credits`)
      .send({ amount_microrub: opts.credit, reference: `seed-${randomUUID()}` })
      .expect(201);
  }
  const key = await h
    .call("POST", "/admin/v1/keys")
    .send({
      user_id: user.body.id,
      organization_id: org.body.id,
      scopes: opts.scopes ?? ["text", "images", "files:write", "files:read", "mcp:read", "mcp:invoke"],
      daily_budget_microrub: opts.dailyBudget ?? 1_000_000_000,
    })
    .expect(201);
  return { userId: user.body.id, organizationId: org.body.id, keyId: key.body.id, key: key.body.key };
}
