import { createHash, randomUUID } from "node:crypto";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { LOCAL_MODEL, startSystemUnderTest, type SystemUnderTest, type TestAccount, waitFor } from "@meter/testing";
import { chromiumReady, launchBrowser } from "./support/browser";

/**
 * The cabinet on a phone's width and at an operator's scale, in Chromium through the real gateway and
 * services (issue 35): no table widens a 390 px page and a row's buttons stay on screen; the operator
 * finds one of many organizations by name and by page, and a credit is asked twice; the ledger's CSV
 * holds what the page shows under a status filter; the pages' files come compressed; and nothing the
 * pages expect (no session yet) is a console error.
 */
jest.setTimeout(120_000);

const PASSWORD = "a phone-sized password";
const MANY = 60;
const PHONE = { width: 390, height: 844 };

let sut: SystemUnderTest;
let browser: Browser;
let operator: BrowserContext;
let member: BrowserContext;
let account: TestAccount;
const consoleErrors: string[] = [];
const assetEncodings: string[] = [];

beforeAll(async () => {
  const [chromiumInfo, system] = await Promise.all([
    chromiumReady(),
    startSystemUnderTest({
      only: ["billing-ledger", "text", "files", "media-jobs", "gateway"],
      env: { ALLOWANCES: "off", MEDIA_ENABLED: "true", COMPLETE_WAIT_MS: "20000" },
    }),
  ]);
  sut = system;
  // Many organizations, so the operator's list has pages (made in small batches: each is a request).
  for (let i = 0; i < MANY; i += 10) {
    await Promise.all(Array.from({ length: 10 }, (_, j) => sut.admin("POST", "/admin/v1/organizations", { name: `Fleet ${String(i + j).padStart(2, "0")}` })));
  }
  account = await sut.account({ credit: 50_000_000 });
  // Three charged requests beside the credit: a ledger with more than one status.
  for (let i = 0; i < 3; i++) await textRequest(64);

  browser = await launchBrowser(chromiumInfo);
  const options = { viewport: PHONE, timezoneId: "UTC", locale: "en-US", baseURL: sut.url };
  operator = await browser.newContext(options);
  member = await browser.newContext(options);
  for (const context of [operator, member]) {
    context.on("console", (m) => {
      if (m.type() === "error") consoleErrors.push(`${m.text()} (${m.location().url})`);
    });
    context.on("response", (r) => {
      if (r.url().includes("/cabinet/assets/main-"))
        assetEncodings.push(`${r.url().split("/").pop()!.split(".").pop()}:${r.headers()["content-encoding"] ?? "none"}`);
    });
  }
  // The member signs in through an invitation's link, as the welcome page does.
  const email = (await sut.admin<{ email: string }>("GET", `/admin/v1/users/${account.userId}`)).email;
  const invitation = await sut.admin<{ token: string }>("POST", "/admin/v1/invitations", { email, organization_id: account.organizationId });
  expect((await member.request.post("/cabinet/api/invitations/accept", { data: { token: invitation.token, password: PASSWORD } })).status()).toBe(201);
}, 300_000);

afterAll(async () => {
  await browser?.close();
  if (sut) {
    await sut.assertBooksBalance();
    await sut.close();
  }
}, 60_000);

async function textRequestStatus(maxTokens: number): Promise<Response> {
  return fetch(`${sut.url}/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json", "idempotency-key": randomUUID() },
    body: JSON.stringify({ model: LOCAL_MODEL, max_tokens: maxTokens, messages: [{ role: "user", content: "a line for the ledger" }] }),
  });
}
async function textRequest(maxTokens: number): Promise<void> {
  const res = await textRequestStatus(maxTokens);
  expect(res.status).toBe(200);
}

/** The page is no wider than the phone (a wide table scrolls inside its own box). */
async function fitsThePhone(page: Page, what: string): Promise<void> {
  const width = (await page.evaluate("document.documentElement.scrollWidth")) as number;
  // On failure, what sticks out: the outermost elements past the right edge.
  const wide = (await page.evaluate(
    `[...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > ${PHONE.width} && !(e.parentElement && e.parentElement.getBoundingClientRect().right > ${PHONE.width})).slice(0, 5).map((e) => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right))`,
  )) as string[];
  expect({ what, width: Math.min(width, PHONE.width), wide: width > PHONE.width ? wide : [] }).toEqual({ what, width, wide: [] });
}

/** Scrolled to (inside its table's own box), the control is wholly on the phone's screen. */
async function onScreen(control: ReturnType<Page["locator"]>): Promise<void> {
  await control.scrollIntoViewIfNeeded();
  const box = (await control.boundingBox())!;
  expect(box.x).toBeGreaterThanOrEqual(0);
  expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
  expect((await control.page().evaluate("document.documentElement.scrollWidth")) as number).toBeLessThanOrEqual(PHONE.width);
}

describe("the operator, among many organizations", () => {
  let page: Page;

  it("signs in with no console error before the session exists", async () => {
    page = await operator.newPage();
    await page.goto("/cabinet/operator/sign-in");
    await page.getByLabel("Admin token").fill(sut.adminToken);
    await page.getByRole("button", { name: "Sign in as operator" }).click();
    await page.getByRole("heading", { name: "Organizations", level: 1 }).waitFor();
    expect(consoleErrors).toEqual([]);
  });

  it("sees them a page at a time and finds one by name", async () => {
    const rows = page.getByTestId("organizations").locator("tbody tr");
    await waitFor(async () => (await rows.count()) === 25, "a first page of 25");
    await fitsThePhone(page, "organizations");
    await page.getByRole("button", { name: "Older" }).click();
    await page.getByText("Page 2").waitFor();
    await waitFor(async () => (await rows.count()) === 25, "a second page of 25");
    await page.getByRole("button", { name: "Newer" }).click();
    await page.getByText("Page 1").waitFor();

    await page.getByLabel("Find an organization").fill("fleet 4");
    await page.getByRole("button", { name: "Find" }).click();
    await waitFor(async () => (await rows.count()) === 10, "the ten organizations named Fleet 4x");
    expect((await rows.allTextContents()).every((t) => t.includes("Fleet 4"))).toBe(true);
    await expect(page.getByRole("button", { name: "Older" }).isDisabled()).resolves.toBe(true);
    await page.getByLabel("Find an organization").fill("Fleet 42");
    await page.getByRole("button", { name: "Find" }).click();
    await waitFor(async () => (await rows.count()) === 1, "Fleet 42 alone");
  });

  it("opens the organization's page and credits it only after saying yes", async () => {
    await page.getByRole("link", { name: "Fleet 42" }).click();
    await page.getByRole("heading", { name: "Fleet 42", level: 1 }).waitFor();
    const orgId = /organizations\/([0-9a-f-]{36})$/.exec(page.url())![1]!;
    await page.getByLabel("Amount, ₽").fill("12.5");
    await page.getByLabel("Reference (invoice, payment id)").fill("invoice 42");
    await page.getByRole("button", { name: "Credit", exact: true }).click();
    const yes = page.getByRole("button", { name: "Yes, credit ₽12.50" });
    await yes.waitFor();
    await expectText(page.locator("#credit-question"), "Fleet 42");
    // Asked, not done: nothing credited yet.
    expect((await sut.admin<{ balance_microrub: number }>("GET", `/admin/v1/organizations/${orgId}/balance`)).balance_microrub).toBe(0);
    await fitsThePhone(page, "an organization's page");
    await yes.click();
    await expectText(page.getByRole("status"), "Credited 12.500000 ₽ (12,500,000 microrub) to Fleet 42");
    expect((await sut.admin<{ balance_microrub: number }>("GET", `/admin/v1/organizations/${orgId}/balance`)).balance_microrub).toBe(12_500_000);
    await waitFor(async () => (await page.getByTestId("ledger").locator("tr[data-status=credited]").count()) === 1, "the credit in its ledger");
    await fitsThePhone(page, "an organization's page with its ledger");
  });

  it("has the member's organization's keys, spend per key and ledger on its page", async () => {
    await page.goto(`/cabinet/operator/organizations/${account.organizationId}`);
    await waitFor(async () => (await page.getByTestId("organization-keys").locator("tbody tr").count()) === 1, "the key");
    await waitFor(async () => (await page.getByTestId("spend-by-key").locator("tbody tr").count()) === 1, "the key's spend");
    await fitsThePhone(page, "the member's organization");
  });
});

describe("a member on a phone", () => {
  let page: Page;

  it("sees keys with Revoke on screen, and the page no wider than the phone", async () => {
    page = await member.newPage();
    await page.goto("/cabinet/keys");
    const revoke = page.getByRole("button", { name: /^Revoke/ });
    await revoke.waitFor();
    await fitsThePhone(page, "keys");
    await onScreen(revoke);
  });

  it("exports as CSV exactly the ledger lines the page shows under a status filter", async () => {
    await page.goto("/cabinet/ledger");
    const ledger = page.getByTestId("ledger");
    await waitFor(async () => (await ledger.locator("tr[data-status=charged]").count()) === 3, "three charges");
    await fitsThePhone(page, "ledger");
    await page.getByLabel("Status").selectOption("charged");
    await waitFor(async () => (await ledger.locator("tbody tr").count()) === 3, "only the charges");
    const shown = await ledger.locator("tbody tr td.num > data.amount").evaluateAll((els) => els.map((e) => Number(e.getAttribute("value"))));
    const href = (await page.getByRole("link", { name: "Export CSV" }).getAttribute("href"))!;
    expect(href).toContain("status=charged");
    const rows = (await (await page.request.get(href)).text()).trim().split("\r\n");
    const header = rows[0]!.split(",");
    const cells = rows.slice(1).map((r) => r.split(","));
    expect(cells.map((c) => c[header.indexOf("status")])).toEqual(["charged", "charged", "charged"]);
    expect(cells.map((c) => Number(c[header.indexOf("amount_microrub")]))).toEqual(shown);
    // Unfiltered, the CSV has the credit too, as the page does.
    const all = (await (await page.request.get("/cabinet/api/ledger.csv")).text()).trim().split("\r\n").slice(1);
    await page.getByLabel("Status").selectOption("");
    await waitFor(async () => (await ledger.locator("tbody tr").count()) === all.length, "every line on the page as in the CSV");
  });

  it("sees files with Download on screen", async () => {
    const png = Buffer.from(
      "89504e470d0a1a0a0000000d4948445200000001000000010806000000" + "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082",
      "hex",
    );
    const auth = { authorization: `Bearer ${account.key}`, "content-type": "application/json" };
    const sha256 = createHash("sha256").update(png).digest("hex");
    const created = (await (
      await fetch(`${sut.url}/v1/files`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ filename: "dot.png", mime_type: "image/png", size_bytes: png.length, sha256 }),
      })
    ).json()) as { id: string; upload: { url: string; headers: Record<string, string> } };
    expect((await fetch(created.upload.url, { method: "PUT", headers: created.upload.headers, body: png })).status).toBe(200);
    await fetch(`${sut.url}/v1/files/${created.id}/complete`, { method: "POST", headers: auth, body: "{}" });
    await waitFor(
      async () => ((await (await fetch(`${sut.url}/v1/files/${created.id}`, { headers: auth })).json()) as { status: string }).status === "verified",
      "the file to be verified",
      60_000,
    );
    await page.goto("/cabinet/files");
    const download = page.getByRole("link", { name: "Download dot.png" });
    await download.waitFor();
    await fitsThePhone(page, "files");
    await onScreen(download);
  }, 120_000);

  it("got the pages' script and stylesheet compressed, and no console error on the way", () => {
    expect(assetEncodings.length).toBeGreaterThan(0);
    for (const e of assetEncodings) expect(e).toMatch(/^(js|css):(br|gzip)$/);
    expect(consoleErrors).toEqual([]);
  });
});

async function expectText(locator: ReturnType<Page["locator"]>, text: string): Promise<void> {
  await waitFor(async () => ((await locator.textContent()) ?? "").includes(text), `"${text}" in ${locator.toString()}`);
}
