import { randomUUID } from "node:crypto";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { publishByHand, startSystemUnderTest, type SystemUnderTest, waitFor } from "@meter/testing";
import { chromiumReady, launchBrowser } from "./support/browser";

/**
 * The operator's System health page in Chromium on a phone's width, through the real gateway and
 * services: reached from the navigation, it shows the services that run as ready and those that do
 * not (files, media jobs and MCP are not started here) as not ready, marks a dead-letter queue that
 * holds a message, and fits 390 px. A member's session and no session get nothing.
 */
jest.setTimeout(90_000);

const PHONE = { width: 390, height: 844 };
const DLQ = "billing-ledger.hold-commands.dlq";

let sut: SystemUnderTest;
let browser: Browser;
let operator: BrowserContext;
let page: Page;

beforeAll(async () => {
  const [chromiumInfo, system] = await Promise.all([chromiumReady(), startSystemUnderTest()]);
  sut = system;
  browser = await launchBrowser(chromiumInfo);
  operator = await browser.newContext({ viewport: PHONE, timezoneId: "UTC", locale: "en-US", baseURL: sut.url });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await sut?.close();
}, 60_000);

async function fitsThePhone(): Promise<void> {
  expect((await page.evaluate("document.documentElement.scrollWidth")) as number).toBeLessThanOrEqual(PHONE.width);
}

it("is reached from the operator's navigation and shows which services are ready", async () => {
  page = await operator.newPage();
  await page.goto("/cabinet/operator/sign-in");
  await page.getByLabel("Admin token").fill(sut.adminToken);
  await page.getByRole("button", { name: "Sign in as operator" }).click();
  await page.getByRole("heading", { name: "Organizations", level: 1 }).waitFor();
  await page.getByRole("navigation", { name: "Cabinet" }).getByRole("link", { name: "System health" }).click();
  await page.getByRole("heading", { name: "System health", level: 1 }).waitFor();
  expect(new URL(page.url()).pathname).toBe("/cabinet/operator/health");

  const services = page.getByTestId("health-services");
  await services.waitFor();
  const stateOf = async (service: string) => (await services.locator(`tr[data-service="${service}"] td`).first().textContent())?.trim();
  for (const up of ["gateway", "billing-ledger", "text"]) expect(await stateOf(up)).toBe("ready");
  for (const down of ["files", "media-jobs", "mcp"]) expect(await stateOf(down)).toBe("not ready");
  await expect(page.getByTestId("services-summary").textContent()).resolves.toBe("3 of 6 not ready");
  await expect(page.getByTestId("broker-summary").textContent()).resolves.toContain("reachable");
  await page.getByTestId("health-providers").getByText("meter-local-echo").first().waitFor();
  await fitsThePhone();
});

it("marks a dead-letter queue that holds a message, on checking again", async () => {
  const row = page.getByTestId("health-queues").locator(`tr[data-queue="${DLQ}"]`);
  expect(await row.getAttribute("class")).toBeNull();
  // Unsigned: billing-ledger dead-letters it at once.
  await publishByHand(sut.env.RABBITMQ_URL!, {
    routingKey: "billing.hold.settle",
    content: JSON.stringify({ version: "v1", hold_id: randomUUID(), amount_microrub: 1 }),
    messageId: randomUUID(),
  });
  await waitFor(async () => {
    await page.getByRole("button", { name: "Check again" }).click();
    await page.getByRole("button", { name: "Check again" }).waitFor();
    return (await row.getAttribute("class")) === "attention";
  }, "the dead letter on the page");
  expect((await row.locator("td.num").first().textContent())?.trim()).toBe("1");
  await expect(page.getByTestId("broker-summary").textContent()).resolves.toContain("1 dead-letter queue holds messages");
  await fitsThePhone();
});

it("is the operator's only: a member's session is refused, and no session is 401", async () => {
  const account = await sut.account();
  const email = (await sut.admin<{ email: string }>("GET", `/admin/v1/users/${account.userId}`)).email;
  const invitation = await sut.admin<{ token: string }>("POST", "/admin/v1/invitations", { email, organization_id: account.organizationId });
  const member = await browser.newContext({ baseURL: sut.url });
  try {
    expect(
      (await member.request.post("/cabinet/api/invitations/accept", { data: { token: invitation.token, password: "a member's password" } })).status(),
    ).toBe(201);
    const refused = await member.request.get("/cabinet/api/admin/health");
    expect(refused.status()).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("insufficient_scope");
  } finally {
    await member.close();
  }
  expect((await fetch(`${sut.url}/cabinet/api/admin/health`)).status).toBe(401);
});
