import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { FAKE_MODEL, queryRows, startSystemUnderTest, type SystemUnderTest, type TestAccount, waitFor } from "@meter/testing";
import { chromiumReady, launchBrowser } from "./support/browser";

/**
 * "Why is my key failing?" in the cabinet (issue 45), in Chromium through the real gateway and
 * services, in English and in Russian, on a desktop and on a phone: a key that can no longer afford its
 * next request is marked refusing on the Keys page with what the request needs and what is left; its
 * refusals are on the Requests page with their reason and what to do, filtered by outcome, the filter
 * kept in the page's address and in the CSV; the overview charts usage over time; the language follows
 * the browser and then the person's choice, kept for them server-side so it wins over another
 * browser's language; the operator's pages read in Russian with no English sentence left; and axe finds
 * no violation on any member page at either size.
 */
jest.setTimeout(180_000);

const PASSWORD = "a password for two languages";
const SIZES = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;
const LOCALES = { en: "en-US", ru: "ru-RU" } as const;
/** A moment as Russian writes it: "28 нояб. 2026 г., 16:01:03". */
const RUSSIAN_DATE = /\d{1,2} [а-яё]+\.? \d{4} г\., \d{2}:\d{2}:\d{2}/;
const OPERATOR_PAGES = [
  "/cabinet/operator",
  "/cabinet/operator/users",
  "/cabinet/operator/catalog",
  "/cabinet/operator/holds",
  "/cabinet/operator/requests",
  "/cabinet/operator/providers",
  "/cabinet/operator/health",
];
const MEMBER_PAGES = [
  "/cabinet",
  "/cabinet/keys",
  "/cabinet/ledger",
  "/cabinet/requests",
  "/cabinet/models",
  "/cabinet/files",
  "/cabinet/webhooks",
  "/cabinet/password",
];
const AXE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

let sut: SystemUnderTest;
let browser: Browser;
let account: TestAccount;
let email: string;
let estimate: number;
let webhook: { id: string; url: string };
let deliveryId: string;
/** The paid request's public id (msg_...), for the operator's provider look-up. */
let paidId: string;
const contexts: BrowserContext[] = [];

async function message(
  model: string,
): Promise<{ status: number; body: { id?: string; billing?: { estimated_cost_microrub: number; cost_microrub: number } } }> {
  const res = await fetch(`${sut.url}/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json", "idempotency-key": randomUUID() },
    body: JSON.stringify({ model, max_tokens: 50, messages: [{ role: "user", content: "why is my key failing?" }] }),
  });
  return { status: res.status, body: (await res.json()) as { id?: string; billing?: { estimated_cost_microrub: number; cost_microrub: number } } };
}

beforeAll(async () => {
  const [chromiumInfo, system] = await Promise.all([
    chromiumReady(),
    startSystemUnderTest({
      only: ["billing-ledger", "text", "files", "media-jobs", "gateway"],
      env: { ALLOWANCES: "off", MEDIA_ENABLED: "true", WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "true" },
    }),
  ]);
  sut = system;
  account = await sut.account({ credit: 50_000_000 });
  email = (await sut.admin<{ email: string }>("GET", `/admin/v1/users/${account.userId}`)).email;
  // One request, then a budget a microruble short of the same request again: the next ones are refused.
  const ok = await message(FAKE_MODEL);
  expect(ok.status).toBe(200);
  estimate = ok.body.billing!.estimated_cost_microrub;
  paidId = ok.body.id!;
  await waitFor(
    async () => (await sut.admin<{ data: unknown[] }>("GET", `/admin/v1/organizations/${account.organizationId}/requests`)).data.length === 1,
    "the paid entry",
  );
  await sut.admin("PATCH", `/admin/v1/keys/${account.keyId}`, { daily_budget_microrub: ok.body.billing!.cost_microrub + estimate - 1 });
  expect((await message(FAKE_MODEL)).status).toBe(429);
  expect((await message(FAKE_MODEL)).status).toBe(429);
  expect((await message("no-such-model")).status).toBe(404);
  // The refusals reach the log within about a second (the gateway's batches).
  await waitFor(
    async () => (await sut.admin<{ data: unknown[] }>("GET", `/admin/v1/organizations/${account.organizationId}/requests?status=refused`)).data.length === 2,
    "the refusals in the log",
  );
  // An endpoint nothing listens on: its test event's delivery fails.
  webhook = await sut.admin<{ id: string; url: string }>("POST", `/admin/v1/organizations/${account.organizationId}/webhooks`, {
    url: "http://127.0.0.1:9/meter-events",
    events: ["balance.low"],
  });
  deliveryId = (await sut.admin<{ delivery_id: string }>("POST", `/admin/v1/organizations/${account.organizationId}/webhooks/${webhook.id}/test`, {}))
    .delivery_id;
  browser = await launchBrowser(chromiumInfo);
}, 300_000);

/** As the webhook worker leaves a delivery whose retry window (a day at least) ended. */
async function deliveryFailed(): Promise<void> {
  await queryRows(sut.env.BILLING_LEDGER_DATABASE_URL!, "UPDATE webhook_deliveries SET status = 'failed', completed_at = now() WHERE id = $1", [deliveryId]);
}

afterAll(async () => {
  await browser?.close();
  if (sut) {
    await sut.assertBooksBalance();
    await sut.close();
  }
}, 60_000);

/** A member's browser in a language and at a size, signed in through an invitation (as `who`, the account's user unless told). */
async function memberBrowser(locale: string, viewport: { width: number; height: number }, who = email): Promise<Page> {
  // bypassCSP: the test injects axe-core into the pages; the cabinet's own policy is checked in cabinet.browser.test.ts.
  const context = await browser.newContext({ viewport, locale, timezoneId: "Europe/Moscow", baseURL: sut.url, bypassCSP: true });
  contexts.push(context);
  const invitation = await sut.admin<{ token: string }>("POST", "/admin/v1/invitations", { email: who, organization_id: account.organizationId });
  expect((await context.request.post("/cabinet/api/invitations/accept", { data: { token: invitation.token, password: PASSWORD } })).status()).toBe(201);
  return context.newPage();
}

async function settled(page: Page): Promise<void> {
  await page.locator("h1").first().waitFor();
  await page.waitForLoadState("networkidle");
}

/** axe-core's violations on the page as it is (any impact), as "rule: target" lines. */
async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: AXE });
  const violations = await page.evaluate(async () => {
    const result = await (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; nodes: { target: string[] }[] }[] }> } }).axe.run();
    return result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  });
  return violations;
}

/**
 * Text of the page (and its placeholders, labels and tooltips) with three Latin words in a row, outside
 * code and data marked translate="no" (model names, the server's own words): English left on a Russian page.
 */
async function englishOn(page: Page): Promise<string[]> {
  return (await page.evaluate(`(() => {
    const english = /[A-Za-z]{2,}(?:[\\s,'’]+[A-Za-z]{2,}){2,}/;
    const found = [];
    const skip = (el) => !el || !!el.closest("code, script, style, [translate=no]");
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const m = english.exec(n.textContent || "");
      if (m && !skip(n.parentElement) && n.parentElement.checkVisibility()) found.push(m[0]);
    }
    for (const el of document.querySelectorAll("[placeholder], [aria-label], [title]")) {
      for (const attr of ["placeholder", "aria-label", "title"]) {
        const m = english.exec(el.getAttribute(attr) || "");
        if (m && !skip(el)) found.push(attr + ": " + m[0]);
      }
    }
    return found;
  })()`)) as string[];
}

/** No wider than the screen; on failure, the outermost elements past its right edge. */
async function fitsTheScreen(page: Page, width: number): Promise<void> {
  const scroll = (await page.evaluate("document.documentElement.scrollWidth")) as number;
  const wide = (await page.evaluate(
    `[...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > ${width} + 0.5 && !(e.parentElement && e.parentElement.getBoundingClientRect().right > ${width} + 0.5)).slice(0, 5).map((e) => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right))`,
  )) as string[];
  expect({ path: new URL(page.url()).pathname, width: Math.min(scroll, width), wide: scroll > width ? wide : [] }).toEqual({
    path: new URL(page.url()).pathname,
    width: scroll,
    wide: [],
  });
}

const WORDS = {
  en: {
    find: "Find an organization",
    organization: "Organization",
    deliveriesTo: "Deliveries to",
    refusing: /^refusing: the next request needs ₽0\.\d+, ₽0\.\d+ left$/,
    requests: "Requests",
    outcome: "Outcome",
    refused: "Refused before reserving",
    help: "daily budget",
  },
  ru: {
    find: "Найти организацию",
    organization: "Организация",
    deliveriesTo: "Доставки на",
    refusing: /^отклоняет: следующему запросу нужно 0,\d+\s₽, осталось 0,\d+\s₽$/,
    requests: "Запросы",
    outcome: "Итог",
    refused: "Отклонён до резерва",
    help: "Дневной бюджет",
  },
};

for (const [lang, locale] of Object.entries(LOCALES) as ["en" | "ru", string][]) {
  for (const [size, viewport] of Object.entries(SIZES)) {
    describe(`a member whose key is refused (${lang}, ${size})`, () => {
      let page: Page;
      const words = WORDS[lang];

      it("sees on the Keys page that the key is refusing, with what its next request needs and what is left", async () => {
        page = await memberBrowser(locale, viewport);
        await page.goto("/cabinet/keys");
        await settled(page);
        expect(await page.evaluate("document.documentElement.lang")).toBe(lang);
        const refusing = page.getByTestId("refusing");
        await refusing.waitFor();
        expect(await refusing.textContent()).toMatch(words.refusing);
        const activity = page.getByTestId("key-activity");
        expect(await activity.textContent()).toMatch(lang === "en" ? /4 today/ : /сегодня: 4/);
        const revoke = page.getByRole("button", { name: lang === "en" ? /^Revoke/ : /^Отозвать/ });
        await revoke.scrollIntoViewIfNeeded();
        const box = (await revoke.boundingBox())!;
        expect(box.x + box.width).toBeLessThanOrEqual(viewport.width);
        await fitsTheScreen(page, viewport.width);
      });

      it("finds the refusals on the Requests page with their reason, filters by outcome, and the filter stays in the address and the CSV", async () => {
        await page.getByRole("navigation").getByRole("link", { name: words.requests, exact: true }).click();
        await page.getByRole("heading", { name: words.requests, level: 1 }).waitFor();
        await page.getByLabel(words.outcome).selectOption({ label: words.refused });
        const rows = page.getByTestId("requests").locator("tbody tr.opens");
        await waitFor(
          async () => (await rows.count()) === 2 && (await rows.evaluateAll((trs) => trs.every((tr) => tr.getAttribute("data-outcome") === "refused"))),
          "the two refusals",
        );
        expect(page.url()).toContain("status=refused");
        const reasons = await page.getByTestId("reason").allTextContents();
        expect(reasons.sort()).toEqual(["daily_budget_exceeded", "model_not_found"]);
        const budgetRow = rows.filter({ hasText: "daily_budget_exceeded" });
        expect(await budgetRow.textContent()).toContain("× 2");
        await budgetRow.getByRole("button").click();
        expect(await page.getByTestId("request-reason").textContent()).toContain(words.help);
        expect(await page.getByTestId("request-totals").textContent()).toMatch(/3/);
        const href = (await page
          .getByRole("link", { name: lang === "en" ? "Export CSV" : "Выгрузить CSV" })
          .first()
          .getAttribute("href"))!;
        const csv = (await (await page.request.get(href)).text()).trim().split("\r\n");
        const header = csv[0]!.split(",");
        expect(csv.slice(1).map((l) => l.split(",")[header.indexOf("outcome")])).toEqual(["refused", "refused"]);
        // The address is the filter: opened afresh, the page shows the same rows.
        await page.goto(page.url());
        await waitFor(async () => (await rows.count()) === 2, "the same two rows from the address");
        await fitsTheScreen(page, viewport.width);
      });

      it("sees usage over time on the overview, the refusals among the errors", async () => {
        await page.goto("/cabinet");
        await settled(page);
        const chart = page.getByTestId("analytics-chart");
        await chart.waitFor();
        const totals = await page.getByTestId("analytics-totals").textContent();
        expect(totals).toMatch(lang === "en" ? /4 requests, 3 refused or failed/ : /запросов: 4, отклонено или не выполнено: 3/);
        await fitsTheScreen(page, viewport.width);
      });

      it(`every member page passes axe with no violation${lang === "ru" ? ", with no English sentence" : ""}`, async () => {
        for (const path of MEMBER_PAGES) {
          await page.goto(path);
          await settled(page);
          expect({ path, violations: await axeViolations(page) }).toEqual({ path, violations: [] });
          if (lang === "ru") expect({ path, english: await englishOn(page) }).toEqual({ path, english: [] });
          await fitsTheScreen(page, viewport.width);
        }
      });
    });
  }
}

for (const [lang, locale] of Object.entries(LOCALES) as ["en" | "ru", string][]) {
  for (const [size, viewport] of Object.entries(SIZES)) {
    describe(`the operator (${lang}, ${size})`, () => {
      let page: Page;

      it("finds the organization by its short id and by a member's email, and reads its refusals", async () => {
        const context = await browser.newContext({ viewport, locale, timezoneId: "UTC", baseURL: sut.url, bypassCSP: true });
        contexts.push(context);
        expect((await context.request.post("/cabinet/api/operator/sign-in", { data: { admin_token: sut.adminToken } })).status()).toBe(201);
        page = await context.newPage();
        await page.goto("/cabinet/operator/requests");
        await settled(page);
        const picker = page.getByRole("combobox", { name: WORDS[lang].organization });
        for (const q of [account.organizationId.slice(0, 8), email.toUpperCase()]) {
          await page.getByRole("searchbox", { name: WORDS[lang].find }).fill(q);
          await waitFor(async () => (await picker.locator("option").count()) === 2, `one organization for ${q}`);
        }
        await picker.selectOption(account.organizationId);
        expect(page.url()).toContain(`organization=${account.organizationId}`);
        await page.getByLabel(WORDS[lang].outcome).selectOption({ label: WORDS[lang].refused });
        await waitFor(async () => (await page.getByTestId("requests").locator("tbody tr.opens").count()) === 2, "the organization's two refusals");
        await fitsTheScreen(page, viewport.width);
      });

      it("sees the organization's members and webhooks, and sends a failed delivery again", async () => {
        await deliveryFailed();
        await page.goto(`/cabinet/operator/organizations/${account.organizationId}`);
        await settled(page);
        await page.getByTestId("organization-members").getByText(email).waitFor();
        await page.getByTestId("organization-webhooks").getByText(webhook.url).waitFor();
        await page.getByRole("button", { name: `${WORDS[lang].deliveriesTo} ${webhook.url}` }).click();
        const log = page.getByTestId("delivery-log");
        const failed = log.locator("tr[data-status=failed]");
        await failed.waitFor();
        const again = failed.getByRole("button", { name: /^Send again|^Отправить снова/ });
        await again.scrollIntoViewIfNeeded();
        expect((await again.boundingBox())!.x + (await again.boundingBox())!.width).toBeLessThanOrEqual(viewport.width);
        await again.click();
        await page
          .getByRole("status")
          .filter({ hasText: lang === "en" ? "is on its way again" : "отправляется снова" })
          .waitFor();
        await waitFor(async () => (await log.locator("tr[data-status=failed]").count()) === 0, "the delivery pending again");
        await fitsTheScreen(page, viewport.width);
      });

      if (lang === "ru" && size === "desktop")
        it("reads every operator page in Russian: no English sentence, amounts and dates as Russian writes them, errors in words", async () => {
          for (const path of [...OPERATOR_PAGES, `/cabinet/operator/organizations/${account.organizationId}`]) {
            await page.goto(path);
            await settled(page);
            expect({ path, english: await englishOn(page) }).toEqual({ path, english: [] });
          }
          await page.goto("/cabinet/operator");
          await settled(page);
          expect(await page.locator("main").textContent()).toMatch(RUSSIAN_DATE);

          // The catalog: its tariffs in Russian amounts; a price change reviewed; the new-model editor and its errors.
          await page.goto("/cabinet/operator/catalog");
          await settled(page);
          await page.getByRole("heading", { name: "Каталог моделей", level: 1 }).waitFor();
          expect(await page.getByTestId("catalog").textContent()).toMatch(/\d,\d+\s₽/);
          await page.getByRole("button", { name: `Изменить ${FAKE_MODEL}` }).click();
          const input = page.getByLabel("Текст на входе, за 1 тыс. токенов, ₽");
          await input.fill("ноль");
          await page.getByRole("button", { name: "Проверить изменение" }).click();
          expect(await page.getByRole("alert").textContent()).toMatch(/^Цена входного текста: нужна сумма в рублях/);
          await input.fill("1000");
          await page.getByRole("button", { name: "Проверить изменение" }).click();
          const effect = page.getByTestId("change-effect");
          await effect.getByRole("heading", { name: "Что сделает это изменение" }).waitFor();
          expect(await effect.textContent()).toMatch(/\+[\d\s]+(,\d)?\s%/);
          expect(await englishOn(page)).toEqual([]);
          await page.getByRole("button", { name: "Вернуться к правке" }).click();
          await page.getByRole("button", { name: "Отмена" }).click();
          await page.getByRole("button", { name: "Добавить модель" }).click();
          await page.getByLabel("Id модели").fill(`ru-model-${randomUUID().slice(0, 8)}`);
          await page.getByLabel("Текст на входе, за 1 тыс. токенов, ₽").fill("0,5");
          await page.getByLabel("Текст на выходе, за 1 тыс. токенов, ₽").fill("1,5");
          // A remote provider without its base URL: the server's words name the field, the page's say what is wrong.
          await page.getByRole("button", { name: "Сохранить модель" }).click();
          const alert = page.getByRole("alert");
          await alert.waitFor();
          expect(await alert.textContent()).toMatch(/^Часть введённого не подходит\..*Подробности: providers\[0\]\.base_url/);
          expect(await englishOn(page)).toEqual([]);
          await page.getByRole("button", { name: "Отмена" }).click();

          // The providers page: a request looked up, in Russian words and dates.
          await page.goto(`/cabinet/operator/providers?request=${paidId}`);
          await settled(page);
          const found = page.getByTestId("text-request");
          await found.waitFor();
          expect(await found.textContent()).toMatch(/выполнен, попыток: 1/);
          expect(await found.textContent()).toMatch(RUSSIAN_DATE);
          expect(await englishOn(page)).toEqual([]);
        });

      it(`every operator page passes axe with no violation${lang === "ru" ? ", with no English sentence" : ""}`, async () => {
        for (const path of [...OPERATOR_PAGES, `/cabinet/operator/organizations/${account.organizationId}`]) {
          await page.goto(path);
          await settled(page);
          expect({ path, violations: await axeViolations(page) }).toEqual({ path, violations: [] });
          if (lang === "ru") expect({ path, english: await englishOn(page) }).toEqual({ path, english: [] });
          await fitsTheScreen(page, viewport.width);
        }
      });
    });
  }
}

describe("the language", () => {
  it("follows the browser until the person chooses, then their choice, kept for them in every browser ahead of its language", async () => {
    // A member of their own here: the choice is theirs everywhere, and the other tests' member keeps the browser's language.
    const polyglot = `polyglot-${randomUUID()}@example.test`;
    const page = await memberBrowser("ru-RU", SIZES.desktop, polyglot);
    await page.goto("/cabinet/keys");
    await page.getByRole("heading", { name: "API-ключи", level: 1 }).waitFor();
    const saved = page.waitForResponse((r) => r.url().endsWith("/cabinet/api/me") && r.request().method() === "PATCH");
    await page.getByRole("combobox", { name: "Язык" }).selectOption("en");
    await page.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
    expect((await saved).status()).toBe(200);
    await page.reload();
    await page.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
    expect(await page.evaluate("document.documentElement.lang")).toBe("en");
    // Another browser, Russian, that never chose, signed in with the password (a new invitation would
    // end the first browser's session): the stored choice wins over its language.
    const other = await browser.newContext({ viewport: SIZES.desktop, locale: "ru-RU", timezoneId: "Europe/Moscow", baseURL: sut.url });
    contexts.push(other);
    expect((await other.request.post("/cabinet/api/sign-in", { data: { email: polyglot, password: PASSWORD } })).status()).toBe(201);
    const elsewhere = await other.newPage();
    await elsewhere.goto("/cabinet/keys");
    await elsewhere.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
    expect(await elsewhere.evaluate("document.documentElement.lang")).toBe("en");
    expect(await elsewhere.evaluate("localStorage.length")).toBe(0);
    // Back to Russian there: the first browser follows on its next load.
    await elsewhere.getByRole("combobox", { name: "Language" }).selectOption("ru");
    await elsewhere.getByRole("heading", { name: "API-ключи", level: 1 }).waitFor();
    await waitFor(async () => {
      await page.reload();
      await page.locator("h1").waitFor();
      return (await page.locator("h1").textContent()) === "API-ключи";
    }, "the first browser in Russian again");
  });

  it("refuses to keep a language the cabinet does not speak, saying so", async () => {
    const page = await memberBrowser("en-US", SIZES.desktop);
    await page.goto("/cabinet/keys");
    await settled(page);
    const csrf = (await page.context().cookies()).find((c) => c.name === "meter_csrf")!.value;
    const res = await page.request.patch("/cabinet/api/me", { data: { locale: "de" }, headers: { "x-csrf-token": csrf } });
    expect(res.status()).toBe(400);
    expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: "invalid_request",
      message: 'locale: "de" is not a language the cabinet speaks: use "en" or "ru" (or null: the browser\'s language)',
    });
  });

  it("shows errors in people's words, the field only as the detail", async () => {
    const page = await memberBrowser("ru-RU", SIZES.desktop);
    await page.goto("/cabinet/keys");
    await page
      .getByRole("button", { name: /^Изменить/ })
      .first()
      .click();
    // The key was made without a name, which the form requires.
    await page
      .getByRole("form", { name: /^Изменить ключ/ })
      .getByRole("textbox", { name: "Название" })
      .fill("ноутбук");
    await page.getByLabel("Оповещать при этих процентах дневного бюджета").fill("50, 180");
    await page.getByRole("button", { name: "Сохранить" }).click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/^Часть введённого не подходит\..*Подробности: .*budget_alert_percents/);
  });
});
