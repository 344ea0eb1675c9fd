import { createHmac, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { FAKE_MODEL, LOCAL_MODEL, startSystemUnderTest, type SystemUnderTest, type TestAccount, waitFor } from "@meter/testing";
import { chromiumReady, launchBrowser } from "./support/browser";

/**
 * The cabinet's pages the big browser test does not walk, in Chromium through the real gateway and
 * services (issue 35): a member's Requests page (rows, a status filter, an opened entry, the CSV), the
 * Webhooks page against a local receiver, editing a key, the Models and prices page (also at a phone's
 * width); the operator's Upstream providers page with a provider cooling down.
 */
jest.setTimeout(90_000);

const PASSWORD = "pages for every member";
const TEXT_ANALYSIS = "meter-local-text-analysis";
/** A text model with two providers: the fake upstream first, the built-in echo behind it. */
const ROUTED = "pages-routed";
const PRICES_OFF = { input_microrub_per_1k_tokens: 9_000, output_microrub_per_1k_tokens: 9_000 };

let sut: SystemUnderTest;
let browser: Browser;
let member: BrowserContext;
let operator: BrowserContext;
let account: TestAccount;
let page: Page;
/** What the local webhook receiver got. */
const received: { headers: IncomingHttpHeaders; body: string }[] = [];
let receiver: Server;

beforeAll(async () => {
  const [chromiumInfo, system] = await Promise.all([
    chromiumReady(),
    startSystemUnderTest({
      only: ["billing-ledger", "text", "gateway"],
      env: { ALLOWANCES: "off", WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "true", WEBHOOK_POLL_INTERVAL_MS: "100" },
    }),
  ]);
  sut = system;
  const seed = JSON.parse(readFileSync(path.resolve(__dirname, "..", "infra", "catalog", "models.json"), "utf8")) as Record<string, unknown>;
  await sut.admin("PUT", `/admin/v1/models/${TEXT_ANALYSIS}`, seed[TEXT_ANALYSIS]);
  await sut.admin("PUT", "/admin/v1/models/pages-switched-off", { enabled: false, provider: { kind: "local" }, operations: { text: PRICES_OFF } });
  await sut.admin("PUT", `/admin/v1/models/${ROUTED}`, {
    enabled: true,
    providers: [
      { kind: "anthropic", base_url: sut.fake.anthropicBaseUrl, upstream_model: "pages-primary", api_key_env: "FAKE_UPSTREAM_API_KEY", priority: 0 },
      { kind: "local", priority: 1 },
    ],
    operations: { text: { input_microrub_per_1k_tokens: 2_000, output_microrub_per_1k_tokens: 4_000 } },
  });
  account = await sut.account({ credit: 50_000_000 });
  receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => (received.push({ headers: req.headers, body }), res.writeHead(204).end()));
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));

  browser = await launchBrowser(chromiumInfo);
  const options = { viewport: { width: 1280, height: 860 }, timezoneId: "UTC", locale: "en-US", baseURL: sut.url };
  member = await browser.newContext(options);
  operator = await browser.newContext(options);
  const email = (await sut.admin<{ email: string }>("GET", `/admin/v1/users/${account.userId}`)).email;
  const invitation = await sut.admin<{ token: string }>("POST", "/admin/v1/invitations", { email, organization_id: account.organizationId });
  expect((await member.request.post("/cabinet/api/invitations/accept", { data: { token: invitation.token, password: PASSWORD } })).status()).toBe(201);
  page = await member.newPage();
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => receiver?.close(r));
  if (sut) {
    await sut.assertBooksBalance();
    await sut.close();
  }
}, 60_000);

/** A text request with the member's key: its answer's status and what it was charged. */
async function message(model: string, idempotencyKey: string, key = account.key): Promise<{ status: number; cost: number }> {
  const res = await fetch(`${sut.url}/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "idempotency-key": idempotencyKey },
    body: JSON.stringify({ model, max_tokens: 32, messages: [{ role: "user", content: `request ${idempotencyKey}` }] }),
  });
  const body = (await res.json()) as { billing?: { cost_microrub: number } };
  return { status: res.status, cost: body.billing?.cost_microrub ?? 0 };
}

async function expectText(locator: Locator, text: string): Promise<void> {
  await waitFor(async () => ((await locator.textContent()) ?? "").includes(text), `"${text}" in ${locator.toString()}`);
}

/** A result the page announces (role=status; a copy button has one of its own). */
async function said(text: string): Promise<void> {
  await page.getByRole("status").filter({ hasText: text }).waitFor();
}

async function openPage(link: string, heading: string): Promise<void> {
  await page.getByRole("navigation", { name: "Cabinet" }).getByRole("link", { name: link, exact: true }).click();
  await page.getByRole("heading", { name: heading, level: 1 }).waitFor();
}

/** The Requests page's rows as [model, status, cost in microrubles], top to bottom. */
async function requestRows(): Promise<string[][]> {
  const rows = page.getByTestId("requests").locator("tbody tr.opens");
  return rows.evaluateAll((trs) =>
    trs.map((tr) => {
      const cells = tr.querySelectorAll("td");
      return [cells[2]!.textContent!.split(" · ")[1]!.trim(), cells[3]!.textContent!.trim(), cells[6]!.querySelector("data")!.getAttribute("value")!];
    }),
  );
}

/** The Export CSV link's file, as [model, status, cost] per line: the same columns the page shows. */
async function csvRows(): Promise<string[][]> {
  const href = await page.getByRole("link", { name: "Export CSV" }).getAttribute("href");
  const csv = await page.request.get(href!);
  expect(csv.headers()["content-type"]).toBe("text/csv; charset=utf-8");
  const [header, ...lines] = (await csv.text()).trim().split("\r\n");
  const col = (name: string) => header!.split(",").indexOf(name);
  // No cell of these entries holds a comma or a quote.
  return lines.map((l) => l.split(",")).map((c) => [c[col("model")]!, c[col("status")]!, c[col("cost_microrub")]!]);
}

describe("a member", () => {
  const requests: { idempotencyKey: string; model: string; status: number; cost: number }[] = [];

  it("sees their paid requests with model, tokens, cost and status; filters, opens one, exports the same rows", async () => {
    for (const [model, idempotencyKey] of [
      [LOCAL_MODEL, "pages-one"],
      [LOCAL_MODEL, "pages-two"],
      [FAKE_MODEL, "pages-three"],
    ] as const) {
      requests.push({ idempotencyKey, model, ...(await message(model, idempotencyKey)) });
    }
    sut.fake.configure({ status: 400 });
    requests.push({ idempotencyKey: "pages-failed", model: FAKE_MODEL, ...(await message(FAKE_MODEL, "pages-failed")) });
    sut.fake.reset();
    expect(requests.map((r) => r.status)).toEqual([200, 200, 200, 502]);

    await page.goto("/cabinet/requests");
    await page.getByRole("heading", { name: "Requests", level: 1 }).waitFor();
    const expected = [...requests].reverse().map((r) => [r.model, String(r.status), String(r.cost)]);
    await waitFor(async () => (await page.reload(), JSON.stringify(await requestRows()) === JSON.stringify(expected)), "the four requests, newest first");
    const first = page.getByTestId("requests").locator("tbody tr.opens").last();
    await expectText(first, "/v1/messages");
    expect(await first.textContent()).toMatch(/\d+ in · \d+ out/);
    expect(Number(await first.locator("data").getAttribute("value"))).toBeGreaterThan(0);
    expect(await csvRows()).toEqual(expected);

    await page.getByLabel("Outcome").selectOption({ label: "HTTP 502" });
    await waitFor(async () => JSON.stringify(await requestRows()) === JSON.stringify([[FAKE_MODEL, "502", "0"]]), "only the failed request");
    expect(await csvRows()).toEqual([[FAKE_MODEL, "502", "0"]]);
    await page.getByTestId("requests").locator("tbody tr.opens").getByRole("button").click();
    const entry = page.getByTestId("request-entry");
    await expectText(entry, "pages-failed");
    await expectText(entry, "not charged (HTTP 502)");
  });

  it("registers a webhook endpoint (its secret shown once), sends it a test event, sees the delivery, deletes it", async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/meter-events`;
    await openPage("Webhooks", "Webhooks and notices");
    await page.getByLabel("URL").fill(url);
    await page.getByRole("button", { name: "Register" }).click();
    const secret = (await page.getByTestId("webhook-secret").textContent())!;
    expect(secret).toMatch(/^whsec_/);
    await page.getByRole("button", { name: "I have saved it" }).click();
    await page.reload();
    await page.getByRole("row", { name: new RegExp(url) }).waitFor();
    expect(await page.content()).not.toContain(secret);

    await page
      .getByRole("row", { name: new RegExp(url) })
      .getByRole("button", { name: "Send a test event" })
      .click();
    await said(`A test event is on its way to ${url}`);
    const log = page.getByTestId("delivery-log");
    await waitFor(async () => {
      await log.getByRole("button", { name: "Refresh the log" }).click();
      return ((await log.getByRole("row", { name: /test/ }).textContent()) ?? "").includes("succeeded");
    }, "the test delivery to succeed");
    await expectText(log.getByRole("row", { name: /test/ }), "204");
    // The receiver got it, signed with the secret the page showed (Standard Webhooks).
    const got = received.at(-1)!;
    expect(JSON.parse(got.body)).toMatchObject({ type: "test" });
    const key = Buffer.from(secret.slice("whsec_".length), "base64");
    const signed = createHmac("sha256", key).update(`${String(got.headers["webhook-id"])}.${String(got.headers["webhook-timestamp"])}.${got.body}`);
    expect(String(got.headers["webhook-signature"]).split(" ")).toContain(`v1,${signed.digest("base64")}`);

    await page.getByRole("button", { name: `Delete ${url}` }).click();
    await page.getByRole("button", { name: "Yes, delete it" }).click();
    await said(`${url} is deleted.`);
    await page.getByText("No endpoints yet.").waitFor();
  });

  it("changes a key's name and daily budget on the keys page; the new values stay after a reload", async () => {
    await openPage("API keys", "API keys");
    const row = page.locator(`tr[data-key-id="${account.keyId}"]`);
    await row.getByRole("button", { name: /^Change / }).click();
    const form = row.getByRole("form", { name: /^Change key / });
    await form.getByLabel("Name").fill("pages runner");
    await form.getByLabel("Daily budget, ₽").fill("12.5");
    await form.getByRole("button", { name: "Save changes" }).click();
    await said("Key pages runner is changed.");
    await page.reload();
    await expectText(row.getByRole("rowheader"), "pages runner");
    await expectText(row.getByTestId("budget-use"), "of ₽12.50");
    const key = await sut.admin<{ name: string; daily_budget_microrub: number }>("GET", `/admin/v1/keys/${account.keyId}`);
    expect(key).toMatchObject({ name: "pages runner", daily_budget_microrub: 12_500_000 });
  });

  it("sees every model the organization can call with its endpoint and prices, also on a phone", async () => {
    await openPage("Models and prices", "Models and prices");
    const table = page.getByTestId("models");
    const row = (model: string) => table.locator(`tr[data-model="${model}"]`);
    await expectText(row(LOCAL_MODEL), "POST /v1/messages");
    await expectText(row(LOCAL_MODEL), "₽0.001 in / ₽0.003 out per 1k tokens");
    await expectText(row(TEXT_ANALYSIS), "POST /v1/text/analysis");
    await expectText(row(TEXT_ANALYSIS), "₽0.00002 per character");
    // The exact microrubles on hover.
    expect(await row(TEXT_ANALYSIS).locator("data").getAttribute("title")).toBe("0.000020 ₽ (20 microrub)");
    // Exactly what a key of the organization may call: the published catalog, without the switched-off model.
    const published = (await (await fetch(`${sut.url}/v1/models`, { headers: { authorization: `Bearer ${account.key}` } })).json()) as {
      data: { id: string }[];
    };
    const shown = await table.locator("tbody tr").evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-model")));
    expect([...new Set(shown)].sort()).toEqual(published.data.map((m) => m.id).sort());
    expect(shown).not.toContain("pages-switched-off");

    const phone = await browser.newContext({
      viewport: { width: 390, height: 844 },
      locale: "en-US",
      baseURL: sut.url,
      storageState: await member.storageState(),
    });
    const small = await phone.newPage();
    await small.goto("/cabinet/models");
    await small.getByTestId("models").locator(`tr[data-model="${TEXT_ANALYSIS}"]`).waitFor();
    expect(await small.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
    await phone.close();
  });
});

describe("the operator", () => {
  it("sees a model's providers with their state, and the first cooling down after it failed", async () => {
    page = await operator.newPage();
    await page.goto("/cabinet/operator/sign-in");
    await page.getByLabel("Admin token").fill(sut.adminToken);
    await page.getByRole("button", { name: "Sign in as operator" }).click();
    await openPage("Upstream providers", "Upstream providers");
    const providers = page.getByTestId("providers");
    const primary = providers.locator("tr", { has: page.getByRole("rowheader", { name: ROUTED }) });
    const spare = providers.locator(`tr:has(th:text-is("${ROUTED}")) + tr`);
    await expectText(primary, "pages-primary");
    await expectText(primary, "in use");
    await expectText(spare, "built in");
    await expectText(spare, "in use");

    // Three refusals in a row (TEXT_PROVIDER_FAILURES_TO_OPEN): each request is answered by the spare.
    sut.fake.configure({ status: 503, failTimes: 3 });
    for (let i = 0; i < 3; i++) expect((await message(ROUTED, randomUUID())).status).toBe(200);
    sut.fake.reset();
    await page.getByRole("button", { name: "Refresh", exact: true }).click();
    await expectText(primary, "cooling down");
    await expectText(primary, "3 failures in a row");
    await expectText(spare, "in use");
  });
});
