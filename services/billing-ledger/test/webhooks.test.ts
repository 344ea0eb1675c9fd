import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { holdCalls, seedAccount, startBilling, until, type BillingHarness } from "./support/billing-harness";
import { createWebhookSender } from "../src/webhooks/webhook-sender.adapter";

/**
 * Webhooks against a real receiver on this machine: events written where money moves, signed per the
 * Standard Webhooks spec (checked here with node:crypto alone), retried until the receiver takes them,
 * and private addresses refused unless WEBHOOK_ALLOW_PRIVATE_ADDRESSES.
 */
interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A receiver whose next answers can be scripted (default 204). */
class Receiver {
  readonly received: Received[] = [];
  answers: number[] = [];
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      this.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.statusCode = this.answers.shift() ?? 204;
      res.end();
    });
  });
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return this;
  }
  url(path = "/hook"): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** The Standard Webhooks check, written from the spec: HMAC-SHA256 of "id.timestamp.body" keyed by the secret's bytes. */
function verifies(secret: string, r: Received): boolean {
  const id = r.headers["webhook-id"] as string;
  const timestamp = r.headers["webhook-timestamp"] as string;
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${r.body}`).digest();
  return String(r.headers["webhook-signature"])
    .split(" ")
    .some((s) => {
      const [version, sig] = s.split(",");
      const given = Buffer.from(sig ?? "", "base64");
      return version === "v1" && given.length === expected.length && timingSafeEqual(given, expected);
    });
}

let h: BillingHarness;
let strict: BillingHarness;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await new Receiver().start();
  [h, strict] = await Promise.all([
    startBilling({ env: { WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "true", WEBHOOK_RETRY_BASE_MS: "100", WEBHOOK_POLL_INTERVAL_MS: "50" } }),
    startBilling(),
  ]);
  // Two billing-ledgers, each with its own database: more than the default hook time on a loaded machine.
}, 120_000);
afterAll(async () => {
  await Promise.all([h?.close(), strict?.close()]);
  await receiver?.close();
});

async function register(harness: BillingHarness, organizationId: string, events: string[], path: string) {
  const res = await harness.call("POST", `/admin/v1/organizations/${organizationId}/webhooks`, { kind: "admin" }, { url: receiver.url(path), events });
  expect(res.status).toBe(201);
  return res.body as { id: string; secret: string; url: string; events: string[] };
}

test("a budget crossing sends exactly one signed budget.threshold event that verifies with the endpoint's secret", async () => {
  const { organizationId, keyId } = await seedAccount(h, { credit: 100_000_000, dailyBudget: 1_000_000 });
  await h.call("PATCH", `/admin/v1/keys/${keyId}`, { kind: "admin" }, { budget_alert_percents: [50, 80] }).expect(200);
  const hook = await register(h, organizationId, ["budget.threshold"], "/budget");
  expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);

  const holds = holdCalls(h);
  for (const [estimate, cost] of [
    [400_000, 400_000], // 40 %: under both
    [300_000, 200_000], // 60 %: crosses 50
    [50_000, 50_000], // 65 %: nothing new
  ]) {
    const placed = await holds.place(keyId, estimate!);
    expect(placed.status).toBe(200);
    expect((await holds.settle(placed.body.hold_id as string, cost!)).status).toBe(200);
  }
  const mine = () => receiver.received.filter((r) => r.body.includes(keyId));
  await until(() => mine().length >= 1, 10_000, "the budget.threshold event");
  // Time for a duplicate to show up, had one been written: several worker passes.
  await new Promise((r) => setTimeout(r, 500));
  expect(mine()).toHaveLength(1);
  const [event] = mine();
  expect(verifies(hook.secret, event!)).toBe(true);
  // Another secret: its first character changed (to "B" where it was "A", so it always differs).
  const other = hook.secret.replace(/^whsec_(.)/, (_, first: string) => `whsec_${first === "A" ? "B" : "A"}`);
  expect(verifies(other, event!)).toBe(false);
  expect(event!.headers["webhook-id"]).toMatch(/^msg_[0-9a-f]{32}$/);
  expect(Math.abs(Number(event!.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(30);
  const payload = JSON.parse(event!.body) as { type: string; timestamp: string; data: Record<string, unknown> };
  expect(payload).toMatchObject({
    type: "budget.threshold",
    data: { organization_id: organizationId, key_id: keyId, percent: 50, daily_budget_microrub: 1_000_000, spent_microrub: 600_000 },
  });

  // The cabinet shows the same event as a notice.
  const notices = await h.call("GET", `/admin/v1/organizations/${organizationId}/notices`).expect(200);
  expect(notices.body.data).toEqual([expect.objectContaining({ id: event!.headers["webhook-id"], type: "budget.threshold" })]);
  await h.assertBooksBalance();
});

test("a receiver that fails twice gets the event on the third try; the log shows every attempt", async () => {
  const { organizationId, keyId } = await seedAccount(h);
  const hook = await register(h, organizationId, ["key.revoked"], "/flaky");
  receiver.answers = [500, 503];
  await h.call("POST", `/admin/v1/keys/${keyId}/revoke`).expect(200);
  const mine = () => receiver.received.filter((r) => r.body.includes(keyId));
  await until(() => mine().length >= 3, 10_000, "three attempts");
  const ids = new Set(mine().map((r) => r.headers["webhook-id"]));
  expect(ids.size).toBe(1);
  expect(mine().every((r) => verifies(hook.secret, r))).toBe(true);
  expect(JSON.parse(mine()[2]!.body)).toMatchObject({ type: "key.revoked", data: { key_id: keyId, organization_id: organizationId } });

  await until(
    async () => (await h.call("GET", `/admin/v1/organizations/${organizationId}/webhooks/${hook.id}/deliveries`)).body.data[0]?.status === "succeeded",
    10_000,
    "the delivery to be recorded",
  );
  const log = await h.call("GET", `/admin/v1/organizations/${organizationId}/webhooks/${hook.id}/deliveries`).expect(200);
  expect(log.body.data).toHaveLength(1);
  expect(log.body.data[0]).toMatchObject({ event_type: "key.revoked", status: "succeeded", attempts: 3, last_response_status: 204 });
  expect(log.body.data[0].attempt_log.map((a: { response_status: number }) => a.response_status)).toEqual([500, 503, 204]);
  await new Promise((r) => setTimeout(r, 300));
  expect(mine()).toHaveLength(3);
});

test("a failed delivery is sent once more on request; a pending or succeeded one is not", async () => {
  const { organizationId } = await seedAccount(h);
  const hook = await register(h, organizationId, ["balance.low"], "/redeliver");
  receiver.answers = [500];
  const sent = await h.call("POST", `/admin/v1/organizations/${organizationId}/webhooks/${hook.id}/test`).expect(202);
  const log = `/admin/v1/organizations/${organizationId}/webhooks/${hook.id}/deliveries`;
  const delivery = async () => (await h.call("GET", log).expect(200)).body.data[0] as { id: string; status: string; attempts: number };
  await until(async () => (await delivery()).attempts >= 1, 10_000, "the first attempt");
  await h.call("POST", `${log}/${sent.body.delivery_id}/redeliver`).expect(409);
  // As the worker leaves a delivery whose retry window ended.
  await h.db.$executeRaw`UPDATE webhook_deliveries SET status = 'failed', completed_at = now() WHERE id = ${sent.body.delivery_id}::uuid`;
  const again = await h.call("POST", `${log}/${sent.body.delivery_id}/redeliver`).expect(202);
  expect(again.body).toMatchObject({ id: sent.body.delivery_id, status: "pending", completed_at: null });
  await until(async () => (await delivery()).status === "succeeded", 10_000, "the delivery sent again");
  expect(receiver.received.filter((r) => r.body.includes(hook.id)).length).toBeGreaterThanOrEqual(2);
  await h.call("POST", `${log}/${sent.body.delivery_id}/redeliver`).expect(409);
  await h.call("POST", `${log}/00000000-0000-4000-8000-000000000000/redeliver`).expect(404);
});

test("the test event reaches one endpoint, signed with its secret; a rotated secret signs the next one", async () => {
  const { organizationId } = await seedAccount(h);
  const hook = await register(h, organizationId, ["balance.low"], "/test");
  const sent = await h.call("POST", `/admin/v1/organizations/${organizationId}/webhooks/${hook.id}/test`).expect(202);
  const mine = () => receiver.received.filter((r) => r.body.includes(hook.id));
  await until(() => mine().length >= 1, 10_000, "the test event");
  expect(mine()[0]!.headers["webhook-id"]).toBe(sent.body.event_id);
  expect(verifies(hook.secret, mine()[0]!)).toBe(true);
  expect(JSON.parse(mine()[0]!.body)).toMatchObject({ type: "test", data: { webhook_id: hook.id } });

  const rotated = await h.call("POST", `/admin/v1/organizations/${organizationId}/webhooks/${hook.id}/rotate-secret`).expect(200);
  expect(rotated.body.secret).not.toBe(hook.secret);
  await h.call("POST", `/admin/v1/organizations/${organizationId}/webhooks/${hook.id}/test`).expect(202);
  await until(() => mine().length >= 2, 10_000, "the second test event");
  expect(verifies(rotated.body.secret, mine()[1]!)).toBe(true);
  expect(verifies(hook.secret, mine()[1]!)).toBe(false);

  const list = await h.call("GET", `/admin/v1/organizations/${organizationId}/webhooks`).expect(200);
  expect(list.body.data).toEqual([expect.objectContaining({ id: hook.id, events: ["balance.low"] })]);
  expect(list.body.data[0].secret).toBeUndefined();
  await h.call("DELETE", `/admin/v1/organizations/${organizationId}/webhooks/${hook.id}`).expect(200);
  await h.call("POST", `/admin/v1/organizations/${organizationId}/webhooks/${hook.id}/test`).expect(404);
});

test("balance.low is sent once when the available balance falls under the line, and again only after a credit", async () => {
  const { organizationId, keyId } = await seedAccount(h, { credit: 1_000_000 });
  await h.call("PATCH", `/admin/v1/organizations/${organizationId}`, { kind: "admin" }, { low_balance_microrub: 500_000 }).expect(200);
  await register(h, organizationId, ["balance.low"], "/low");
  const holds = holdCalls(h);
  const a = await holds.place(keyId, 600_000); // available 400 000: under the line
  await holds.release(a.body.hold_id as string); // back over it: no new alert without a credit
  const b = await holds.place(keyId, 600_000);
  await holds.settle(b.body.hold_id as string, 600_000);
  await h.call("POST", `/admin/v1/organizations/${organizationId}/credits`, { kind: "admin" }, { amount_microrub: 1_000_000, reference: "top-up" }).expect(201);
  const c = await holds.place(keyId, 1_000_000); // 1 400 000 -> 400 000: under again
  await holds.settle(c.body.hold_id as string, 1_000_000);

  const mine = () => receiver.received.filter((r) => r.body.includes(organizationId) && r.body.includes("balance.low"));
  await until(() => mine().length >= 2, 10_000, "two balance.low events");
  await new Promise((r) => setTimeout(r, 300));
  expect(mine().map((r) => (JSON.parse(r.body) as { data: { available_microrub: number } }).data.available_microrub)).toEqual([400_000, 400_000]);
});

test("registration is strict: bad URLs, unknown events and fields are refused with their codes", async () => {
  const { organizationId } = await seedAccount(h);
  const post = (body: unknown) => h.call("POST", `/admin/v1/organizations/${organizationId}/webhooks`, { kind: "admin" }, body);
  expect((await post({ url: "ftp://example.com/x", events: ["key.revoked"] })).body.error.code).toBe("invalid_webhook_url");
  expect((await post({ url: "https://user:pw@example.com/x", events: ["key.revoked"] })).body.error.code).toBe("invalid_webhook_url");
  expect((await post({ url: "not a url", events: ["key.revoked"] })).body.error.code).toBe("invalid_webhook_url");
  expect((await post({ url: receiver.url(), events: ["key.stolen"] })).status).toBe(400);
  expect((await post({ url: receiver.url(), events: [] })).status).toBe(400);
  expect((await post({ url: receiver.url(), events: ["key.revoked", "key.revoked"] })).status).toBe(400);
  expect((await post({ url: receiver.url(), events: ["key.revoked"], colour: "red" })).body.error.code).toBe("unknown_field");
  expect(
    (
      await h.call(
        "POST",
        "/admin/v1/organizations/00000000-0000-4000-8000-000000000000/webhooks",
        { kind: "admin" },
        { url: receiver.url(), events: ["key.revoked"] },
      )
    ).status,
  ).toBe(404);
  for (let i = 0; i < 10; i++) await post({ url: receiver.url(`/n${i}`), events: ["key.revoked"] }).expect(201);
  expect((await post({ url: receiver.url(), events: ["key.revoked"] })).body.error.code).toBe("conflict");
});

test("without WEBHOOK_ALLOW_PRIVATE_ADDRESSES private addresses are refused at registration and at the connection", async () => {
  const { organizationId } = await seedAccount(strict);
  for (const url of [
    receiver.url(),
    "http://localhost:9/x",
    "http://[::1]:9/x",
    "http://169.254.169.254/latest",
    "http://10.0.0.1/x",
    "https://[::ffff:127.0.0.1]/x",
  ]) {
    const res = await strict.call("POST", `/admin/v1/organizations/${organizationId}/webhooks`, { kind: "admin" }, { url, events: ["key.revoked"] });
    expect([url, res.status, res.body.error?.code]).toEqual([url, 422, "webhook_address_not_allowed"]);
  }
  // A name that resolved to a public address at registration and to a private one now is refused at the connection.
  const before = receiver.received.length;
  const sender = createWebhookSender({ timeoutMs: 2_000, allowPrivate: false });
  const byName = await sender.send(receiver.url().replace("127.0.0.1", "localhost"), {}, "{}");
  expect(byName).toMatchObject({ ok: false, error: expect.stringMatching(/not a public address/) });
  const byAddress = await sender.send(receiver.url(), {}, "{}");
  expect(byAddress).toMatchObject({ ok: false, error: expect.stringMatching(/not a public address/) });
  expect(receiver.received.length).toBe(before);
});

test("a member manages the endpoints of the organization chosen in the cabinet, and no other's", async () => {
  const mine = await seedAccount(h);
  const theirs = await seedAccount(h);
  const member = { kind: "session", role: "member", session_id: randomUUID(), user_id: mine.userId, organization_id: mine.organizationId } as const;
  const created = await h.call("POST", "/cabinet/v1/webhooks", member, { url: receiver.url("/member"), events: ["key.expired"] }).expect(201);
  expect(created.body).toMatchObject({ organization_id: mine.organizationId, events: ["key.expired"], secret: expect.stringMatching(/^whsec_/) });
  const list = await h.call("GET", "/cabinet/v1/webhooks", member).expect(200);
  expect(list.body.data.map((w: { id: string }) => w.id)).toEqual([created.body.id]);

  const other = await register(h, theirs.organizationId, ["key.revoked"], "/other");
  for (const [method, path] of [
    ["POST", `/cabinet/v1/webhooks/${other.id}/test`],
    ["POST", `/cabinet/v1/webhooks/${other.id}/rotate-secret`],
    ["GET", `/cabinet/v1/webhooks/${other.id}/deliveries`],
    ["DELETE", `/cabinet/v1/webhooks/${other.id}`],
  ] as const) {
    expect([path, (await h.call(method, path, member)).status]).toEqual([path, 404]);
  }

  // An expired key's event reaches the member's endpoint and shows as a notice.
  await h.db.apiKey.updateMany({ where: { id: mine.keyId }, data: { expiresAt: new Date(Date.now() - 1_000) } });
  const expired = () => receiver.received.filter((r) => r.body.includes(mine.keyId) && r.body.includes("key.expired"));
  await until(() => expired().length >= 1, 10_000, "the key.expired event");
  expect(verifies(created.body.secret, expired()[0]!)).toBe(true);
  const notices = await h.call("GET", "/cabinet/v1/notices", member).expect(200);
  expect(notices.body.data).toEqual([expect.objectContaining({ type: "key.expired", data: expect.objectContaining({ key_id: mine.keyId }) })]);
  await new Promise((r) => setTimeout(r, 300));
  expect(expired()).toHaveLength(1);
});
