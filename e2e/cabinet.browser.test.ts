import { spawnSync } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { LOCAL_MODEL, signedCall, startSystemUnderTest, type SystemUnderTest, waitFor } from "@meter/testing";
import { chromiumReady, launchBrowser } from "./support/browser";

/**
 * The web cabinet in a real browser (Debian's Chromium, driven by playwright-core) through the real
 * gateway and services, each its own process: the operator credits an organization and invites a
 * member; the member sets a password, signs in, creates a key, uses it with the official SDK, sees the
 * spend in the chart and the ledger, revokes the key and the key is refused. Every page is
 * photographed into docs/cabinet/ for the README.
 */
const root = path.resolve(__dirname, "..");
const SHOTS = path.join(root, "docs", "cabinet");
const TEXT_ANALYSIS = "meter-local-text-analysis";
const MEMBER = { email: "ada@acme.test", password: "analytical engine 1843" };
const USER_ZONE = "Europe/Moscow";

// Each step drives a browser through several services; some wait for settlements and verifications.
jest.setTimeout(90_000);

let sut: SystemUnderTest;
let browser: Browser;
let operator: BrowserContext;
let member: BrowserContext;
let page: Page;
/** Set along the way and used by later steps (jest runs a file's tests in order). */
const state: { invitationLink?: string; key?: string; keyName?: string; charged: number; organizationId?: string; fileId?: string; jobId?: string } = {
  charged: 0,
};
/** What the browser said about the page's security policy: nothing, if the bundle needs nothing from elsewhere. */
const policyViolations: string[] = [];

beforeAll(async () => {
  const [chromiumInfo, system] = await Promise.all([
    chromiumReady(),
    // Per-request holds: the ledger page is counted right after the requests, while an allowance would
    // still show as one reserved line until it is returned (docs/cabinet/README.md).
    startSystemUnderTest({
      only: ["billing-ledger", "text", "files", "media-jobs", "gateway"],
      env: { ALLOWANCES: "off", MEDIA_ENABLED: "true", COMPLETE_WAIT_MS: "20000" },
    }),
  ]);
  sut = system;
  const seed = JSON.parse(readFileSync(path.join(root, "infra", "catalog", "models.json"), "utf8")) as Record<string, unknown>;
  for (const id of [TEXT_ANALYSIS, "meter-local-image-edit"]) await sut.admin("PUT", `/admin/v1/models/${id}`, seed[id]);
  browser = await launchBrowser(chromiumInfo);
  const contextOptions = { viewport: { width: 1280, height: 860 }, timezoneId: USER_ZONE, locale: "en-US", baseURL: sut.url };
  operator = await browser.newContext(contextOptions);
  member = await browser.newContext(contextOptions);
  await member.grantPermissions(["clipboard-read", "clipboard-write"], { origin: sut.url });
  for (const context of [operator, member]) {
    context.on("console", (m) => {
      if (m.text().includes("Content Security Policy")) policyViolations.push(m.text());
    });
  }
  mkdirSync(SHOTS, { recursive: true });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  if (sut) {
    await sut.assertBooksBalance();
    await sut.close();
  }
}, 60_000);

/** A full-page picture for the docs; secrets (keys, links) are painted over. */
async function shot(p: Page, name: string, mask: Locator[] = []): Promise<Buffer> {
  return p.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true, mask, animations: "disabled" });
}

describe("the operator", () => {
  it("signs in with the admin token once, then works with a session", async () => {
    page = await operator.newPage();
    await page.goto("/cabinet/operator/sign-in");
    await page.getByLabel("Admin token").fill(sut.adminToken);
    await page.getByRole("button", { name: "Sign in as operator" }).click();
    await page.getByRole("heading", { name: "Organizations", level: 1 }).waitFor();
    const cookies = await operator.cookies();
    expect(cookies.map((c) => c.name).sort()).toEqual(["meter_csrf", "meter_session"]);
    expect(cookies.find((c) => c.name === "meter_session")).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/cabinet" });
    expect(JSON.stringify(cookies)).not.toContain(sut.adminToken);
  });

  it("creates an organization and credits it, with a reference", async () => {
    await page.getByLabel("Name").fill("Acme Robotics");
    await page.getByRole("button", { name: "Create organization" }).click();
    const row = page.getByRole("row", { name: /Acme Robotics/ });
    await row.waitFor();
    const creditForm = page.getByRole("form", { name: "Credit an organization" });
    await creditForm.getByRole("combobox", { name: "Organization" }).selectOption({ label: "Acme Robotics" });
    await page.getByLabel("Amount, ₽").fill("500");
    await page.getByLabel("Reference (invoice, payment id)").fill("invoice 2026-117");
    await page.getByRole("button", { name: "Credit", exact: true }).click();
    await page.getByRole("button", { name: "Yes, credit ₽500.00" }).click();
    await page.getByRole("status").filter({ hasText: "Credited 500.000000 ₽" }).waitFor();
    await expectText(row, "₽500.00");
    state.organizationId = (await row.locator("code.id").textContent()) ?? undefined;
    await shot(page, "operator-organizations");
  });

  it("invites a member into the organization: a one-time link valid a day", async () => {
    await page.getByRole("link", { name: "Users and invitations" }).click();
    await page.getByRole("heading", { name: "Users and invitations", level: 1 }).waitFor();
    await page.getByLabel("Email").fill(MEMBER.email);
    await page.getByLabel("Add to organization (optional)").selectOption({ label: "Acme Robotics" });
    await page.getByRole("button", { name: "Create sign-in link" }).click();
    const link = page.getByTestId("invitation-link");
    state.invitationLink = (await link.textContent())!;
    expect(state.invitationLink).toMatch(new RegExp(`^${sut.url}/cabinet/welcome#invitation=mci_`));
    await page
      .getByRole("row", { name: new RegExp(MEMBER.email) })
      .first()
      .waitFor();
    await expectText(page.getByTestId("invitations"), "pending");
    await shot(page, "operator-users", [link]);
  });

  it("reviews a tariff change's effect before saving it", async () => {
    await page.getByRole("link", { name: "Model catalog" }).click();
    await page.getByRole("button", { name: "Edit meter-local-image-edit" }).click();
    await page.getByLabel("image edit, per request, ₽").fill("0.45");
    await page.getByRole("button", { name: "Review the change" }).click();
    const effect = page.getByTestId("change-effect");
    await expectText(effect, "+50%");
    await expectText(effect, "₽0.30");
    await expectText(effect, "₽0.45");
    await shot(page, "operator-catalog");
    await page.getByRole("button", { name: "Save the change" }).click();
    await page.getByRole("status").filter({ hasText: "Saved meter-local-image-edit" }).waitFor();
    const models = await sut.admin<{ data: { id: string; operations: { image_edit?: { price_per_unit_microrub: number } } }[] }>("GET", "/admin/v1/models");
    expect(models.data.find((m) => m.id === "meter-local-image-edit")?.operations.image_edit?.price_per_unit_microrub).toBe(450_000);
  });

  it("sees a stale hold and releases it with a reason", async () => {
    // A hold nobody resolves, placed as the text service places one.
    const stranger = await sut.account();
    const holdId = randomUUID();
    const call = signedCall("text", "billing-ledger", { kind: "service", service: "text" }, "POST", "/internal/v1/hold-ops", {
      ops: [
        {
          op: "place",
          hold_id: holdId,
          key_id: stranger.keyId,
          amount_microrub: 1_250_000,
          operation: "text",
          model: LOCAL_MODEL,
          source: "text",
          owner_ref: `lost-${holdId}`,
        },
      ],
    });
    const placed = await fetch(`${sut.system.urls["billing-ledger"]}/internal/v1/hold-ops`, { method: "POST", headers: call.headers, body: call.payload });
    expect(placed.status).toBe(200);

    await page.getByRole("link", { name: "Stale holds" }).click();
    await page.getByLabel("Active for more than (minutes)").fill("0");
    const row = page.getByRole("row", { name: new RegExp(`lost-${holdId}`) });
    await row.waitFor();
    await shot(page, "operator-holds");
    await row.getByLabel(/Reason for releasing hold/).fill("lost in the test");
    await row.getByRole("button", { name: "Release" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `Released hold ${holdId}` })
      .waitFor();
    const hold = await sut.admin<{ data: { hold_id: string; status: string }[] }>("GET", "/admin/v1/holds?status=released&limit=500");
    expect(hold.data.find((h) => h.hold_id === holdId)?.status).toBe("released");
    await page.getByRole("button", { name: "Sign out", exact: true }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    expect(await operator.cookies()).toEqual([]);
  });

  it("invites from the terminal too (`pnpm cabinet user invite`), printing a link that works", async () => {
    const cli = spawnSync(
      path.join(root, "node_modules", ".bin", "tsx"),
      [path.join(root, "services/billing-ledger/src/cli/cabinet.ts"), "user", "invite", "--email", "grace@acme.test", "--org", state.organizationId!],
      {
        env: { ...process.env, METER_URL: sut.url, ADMIN_TOKEN: sut.adminToken },
        encoding: "utf8",
      },
    );
    expect(cli.status).toBe(0);
    const link = /(http\S+\/cabinet\/welcome#invitation=(mci_\S+))/.exec(cli.stdout);
    expect(link?.[1]?.startsWith(sut.url)).toBe(true);
    const accepted = await fetch(`${sut.url}/cabinet/api/invitations/accept`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: link![2], password: "a password from the terminal" }),
    });
    expect(accepted.status).toBe(201);
  });
});

describe("a member", () => {
  it("opens the invitation link and chooses a password", async () => {
    page = await member.newPage();
    await page.goto(state.invitationLink!);
    await page.getByRole("heading", { name: "Choose your password" }).waitFor();
    // The token leaves the address bar at once.
    expect(page.url()).toBe(`${sut.url}/cabinet/welcome`);
    await page.getByLabel("New password").fill(MEMBER.password);
    await page.getByLabel("The same password again").fill(MEMBER.password);
    await shot(page, "welcome");
    await page.getByRole("button", { name: "Set password and sign in" }).click();
    await page.getByRole("heading", { name: "Overview: Acme Robotics" }).waitFor();
  });

  it("signs out and signs in again with email and password", async () => {
    await page.getByRole("button", { name: "Sign out", exact: true }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.getByLabel("Email").fill(MEMBER.email);
    await page.getByLabel("Password").fill("not my password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expectText(page.getByRole("alert"), "the email or the password is wrong");
    await page.getByLabel("Password").fill(MEMBER.password);
    await shot(page, "sign-in");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview: Acme Robotics" }).waitFor();
    await expectText(page.getByTestId("available"), "₽500.00");
  });

  it("creates a key, shown once, with a copy button", async () => {
    await page.getByRole("link", { name: "API keys" }).click();
    // A long name: the ledger cuts it to keep its reference column readable.
    state.keyName = "sdk laptop of the analytical engine team, second floor";
    await page.getByLabel("Name").fill(state.keyName);
    // text is ticked already; files:write for the upload below.
    await page.getByRole("checkbox", { name: /files:write/ }).check();
    await page.getByLabel("Daily budget, ₽").fill("10");
    await page.getByRole("button", { name: "Create key" }).click();
    const shown = page.getByTestId("new-key");
    state.key = (await shown.textContent())!;
    expect(state.key).toMatch(/^mtr_[A-Za-z0-9_-]{32}$/);
    await page.getByRole("button", { name: "Copy key" }).click();
    await expectText(page.locator(".copy-status"), "Copied");
    // A string: this file is compiled without the DOM's types.
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(state.key);
    await expectText(page.getByRole("row", { name: new RegExp(state.keyName) }), "₽10.00");
    await shot(page, "keys-created", [shown]);
    await page.getByRole("button", { name: "I have saved it" }).click();
    await page.reload();
    await expect(page.getByTestId("new-key").count()).resolves.toBe(0);
    expect(await page.content()).not.toContain(state.key);
  });

  it("uses the key with the official SDK, uploads a file and runs a job", async () => {
    const client = new Anthropic({ apiKey: state.key!, baseURL: sut.url, maxRetries: 0 });
    const message = await client.messages.create(
      { model: LOCAL_MODEL, max_tokens: 64, messages: [{ role: "user", content: "What did the analytical engine weave?" }] },
      { headers: { "Idempotency-Key": randomUUID() } },
    );
    const billing = (message as unknown as { billing: { status: string; cost_microrub: number } }).billing;
    expect(billing.status).toBe("settled");
    expect(billing.cost_microrub).toBeGreaterThan(0);
    state.charged += billing.cost_microrub;

    // A file (this page's own picture) and a text analysis job, for the files and jobs page.
    const png = await page.screenshot();
    const auth = { authorization: `Bearer ${state.key}`, "content-type": "application/json" };
    const created = (await (
      await fetch(`${sut.url}/v1/files`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ filename: "keys-page.png", mime_type: "image/png", size_bytes: png.length, sha256: sha256(png) }),
      })
    ).json()) as { id: string; upload: { url: string; headers: Record<string, string> } };
    state.fileId = created.id;
    expect((await fetch(created.upload.url, { method: "PUT", headers: created.upload.headers, body: png })).status).toBe(200);
    await fetch(`${sut.url}/v1/files/${created.id}/complete`, { method: "POST", headers: auth, body: "{}" });
    await waitFor(
      async () => ((await (await fetch(`${sut.url}/v1/files/${created.id}`, { headers: auth })).json()) as { status: string }).status === "verified",
      "the file to be verified",
      60_000,
    );

    const job = (await (
      await fetch(`${sut.url}/v1/text/analysis`, {
        method: "POST",
        headers: { ...auth, "idempotency-key": randomUUID() },
        body: JSON.stringify({ model: TEXT_ANALYSIS, input: "Ada Lovelace wrote the first program in London.", settings: { tasks: ["language", "entities"] } }),
      })
    ).json()) as { id: string };
    state.jobId = job.id;
    const done = await waitFor(
      async () => {
        const j = (await (await fetch(`${sut.url}/v1/jobs/${job.id}`, { headers: auth })).json()) as { status: string; billing: { cost_microrub: number } };
        return j.status === "succeeded" && j;
      },
      "the job to succeed",
      60_000,
    );
    state.charged += done.billing.cost_microrub;
  }, 120_000);

  it("sees the spend on the chart, split by model and operation", async () => {
    await page.getByRole("link", { name: "Overview" }).click();
    const chart = page.getByTestId("spend-chart");
    await waitFor(async () => {
      await page.getByRole("button", { name: "Refresh" }).click();
      return Number(await chart.getAttribute("data-total-microrub")) === state.charged;
    }, "the settlements to reach the chart");
    await chart.getByText("The figures as a table").click();
    await expectText(chart.getByRole("row", { name: new RegExp(`${LOCAL_MODEL} text`) }), "1");
    await expectText(chart.getByRole("row", { name: new RegExp(`${TEXT_ANALYSIS} text_analysis`) }), "1");
    expect(await chart.locator("canvas").boundingBox()).toMatchObject({ height: expect.any(Number) });
    await shot(page, "overview");
  });

  it("sees one line per request in the ledger, signed, and filters it by status and by a day as the browser's language writes it", async () => {
    await page.getByRole("link", { name: "Ledger" }).click();
    const ledger = page.getByTestId("ledger");
    const textLine = ledger.locator("tr[data-status=charged]", { hasText: LOCAL_MODEL });
    await expectText(textLine, "text");
    // A true minus before the amount; a charge under half a kopeck reads "<₽0.01" (one precision on screen).
    await expectText(textLine, "− ");
    await expectText(textLine, "₽");
    expect(await textLine.textContent()).not.toContain("-₽");
    await expectText(ledger.locator("tr[data-status=charged]", { hasText: TEXT_ANALYSIS }), "text_analysis");
    const credit = ledger.locator("tr[data-status=credited]");
    await expectText(credit, "+");
    await expectText(credit, "invoice 2026-117");
    // One line per request (two charged) and the credit: no separate hold and settlement lines.
    expect(await ledger.locator("tbody tr").count()).toBe(3);
    // A long key name is cut; the reference keeps its room.
    expect((await textLine.locator(".key-name").boundingBox())!.width).toBeLessThanOrEqual(160);
    expect((await credit.locator("td.reference").boundingBox())!.width).toBeGreaterThanOrEqual(224);
    await shot(page, "ledger");

    await page.getByLabel("Status").selectOption("charged");
    await waitFor(
      async () => (await ledger.locator("tbody tr").count()) === 2 && (await ledger.locator("tr[data-status=charged]").count()) === 2,
      "only charges",
    );
    const day = page.getByLabel(`Day (${USER_ZONE})`);
    expect(await day.getAttribute("placeholder")).toBe("mm/dd/yyyy");
    const todayIn = (locale: string) =>
      new Intl.DateTimeFormat(locale, { timeZone: USER_ZONE, year: "numeric", month: "2-digit", day: "2-digit" }).format(new Date());
    await day.fill(todayIn("en-US"));
    await day.press("Enter");
    await page.getByRole("button", { name: "Any day" }).waitFor();
    await waitFor(async () => (await ledger.locator("tr[data-status=charged]").count()) === 2, "today's charges");
    const href = await page.getByRole("link", { name: "Export CSV" }).getAttribute("href");
    expect(href).toContain("since=");
    const csv = await page.request.get(href!);
    expect(csv.headers()["content-type"]).toBe("text/csv; charset=utf-8");
    // The CSV holds what the page shows under the same filter: the two charges, signed.
    const rows = (await csv.text()).trim().split("\r\n").slice(1).map(csvCells);
    expect(rows.map((r) => r[4])).toEqual(["charged", "charged"]);
    expect(rows.reduce((sum, r) => sum - Number(r[10]), 0)).toBe(state.charged);

    // The same page in Russian (the browser's language) asks for the day as Russian writes it.
    const russian = await browser.newContext({
      viewport: { width: 1280, height: 860 },
      timezoneId: USER_ZONE,
      locale: "ru-RU",
      baseURL: sut.url,
      storageState: await member.storageState(),
    });
    const ru = await russian.newPage();
    await ru.goto("/cabinet/ledger");
    const ruDay = ru.getByLabel(`День (${USER_ZONE})`);
    expect(await ruDay.getAttribute("placeholder")).toBe("dd.mm.yyyy");
    await ruDay.fill(todayIn("en-US"));
    await ruDay.press("Enter");
    await expectText(ru.locator("#day-error"), "dd.mm.yyyy");
    await ruDay.fill(todayIn("ru-RU"));
    await ruDay.press("Enter");
    await ru.getByRole("button", { name: "Любой день" }).waitFor();
    await waitFor(async () => (await ru.getByTestId("ledger").locator("tbody tr").count()) === 3, "today's lines");
    await russian.close();
  });

  it("sees their files and jobs, outside the organization switcher, downloads and deletes a file and a job's result", async () => {
    await page.getByRole("link", { name: "Files and jobs" }).click();
    const fileRow = page.getByTestId("files").getByRole("row", { name: /keys-page\.png/ });
    await expectText(fileRow, "verified");
    await expectText(page.getByTestId("jobs").getByRole("row", { name: /text_analysis/ }), "succeeded");
    // Files are the user's in every organization: no switcher on this page.
    await expect(page.getByRole("combobox", { name: "Organization" }).count()).resolves.toBe(0);
    await shot(page, "files-and-jobs");

    const downloaded = async (name: string) => {
      const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name }).click()]);
      return { filename: download.suggestedFilename(), body: readFileSync((await download.path())!) };
    };
    const file = await downloaded("Download keys-page.png");
    expect(file.filename).toBe("keys-page.png");
    expect(file.body.subarray(1, 4).toString()).toBe("PNG");
    const jobShort = state.jobId!.slice(0, 8);
    const result = await downloaded(`Download the result of job ${jobShort}`);
    expect(JSON.parse(result.body.toString("utf8"))).toMatchObject({ language: expect.anything() });

    await page.getByRole("button", { name: "Delete keys-page.png" }).click();
    await fileRow.getByRole("button", { name: "Yes, delete it" }).click();
    await page.getByRole("status").filter({ hasText: "Deleted keys-page.png" }).waitFor();
    await waitFor(async () => (await fileRow.count()) === 0, "the deleted file to leave the list");
    const auth = { authorization: `Bearer ${state.key}` };
    expect((await fetch(`${sut.url}/v1/files/${state.fileId}`, { headers: auth })).status).toBe(404);

    await page.getByRole("button", { name: `Delete the result of job ${jobShort}` }).click();
    await page.getByRole("button", { name: "Yes, delete it" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `Deleted the result of job ${jobShort}` })
      .waitFor();
    const job = (await (await fetch(`${sut.url}/v1/jobs/${state.jobId}`, { headers: auth })).json()) as { result: { file_id: string } };
    expect((await fetch(`${sut.url}/v1/files/${job.result.file_id}/content`, { headers: auth })).status).toBe(404);
  });

  it("sees today's spend against the key's budget, revokes the key, and the key is refused", async () => {
    await page.getByRole("link", { name: "API keys" }).click();
    const row = page.getByRole("row", { name: new RegExp(state.keyName!) });
    await expectText(row.getByTestId("budget-use"), "of ₽10.00");
    expect(Number(await row.getByTestId("budget-use").locator("data").first().getAttribute("value"))).toBe(state.charged);
    const revoke = row.getByRole("button", { name: `Revoke ${state.keyName}` });
    // The button says only what it does; its accessible name says which key.
    expect(await revoke.textContent()).toBe("Revoke");
    await revoke.click();
    await shot(page, "keys");
    await row.getByRole("button", { name: "Yes, revoke it" }).click();
    // Revoked keys leave the list, until asked for.
    await waitFor(async () => (await row.count()) === 0, "the revoked key to leave the list");
    await page.getByRole("checkbox", { name: /Show revoked and expired keys \(1 hidden\)/ }).check();
    await expectText(row, "revoked");
    await expect(row.getByRole("button").count()).resolves.toBe(0);
    const client = new Anthropic({ apiKey: state.key!, baseURL: sut.url, maxRetries: 0 });
    const refused = await waitFor(
      async () =>
        client.messages
          .create(
            { model: LOCAL_MODEL, max_tokens: 8, messages: [{ role: "user", content: "still there?" }] },
            { headers: { "Idempotency-Key": randomUUID() } },
          )
          .then(
            () => undefined,
            (e: unknown) => (e instanceof Anthropic.AuthenticationError ? e : undefined),
          ),
      "the revoked key to be refused",
      5_000,
    );
    expect(refused.status).toBe(401);
  });

  it("changes the password with the current one: a wrong one is refused, other sessions end, this one stays", async () => {
    const elsewhere = await browser.newContext({ baseURL: sut.url });
    const signedIn = await elsewhere.request.post("/cabinet/api/sign-in", { data: { email: MEMBER.email, password: MEMBER.password } });
    expect(signedIn.status()).toBe(201);
    await page.getByRole("link", { name: "Password" }).click();
    const NEW = "difference engine 1822";
    await page.getByLabel("Current password").fill("not my password");
    await page.getByLabel("New password", { exact: true }).fill(NEW);
    await page.getByLabel("The new password again").fill(NEW);
    await page.getByRole("button", { name: "Change password" }).click();
    await expectText(page.getByRole("alert"), "the current password is wrong");
    expect((await elsewhere.request.get("/cabinet/api/me")).status()).toBe(200);
    await page.getByLabel("Current password").fill(MEMBER.password);
    await page.getByRole("button", { name: "Change password" }).click();
    await expectText(page.getByRole("status"), "1 other session was signed out");
    await shot(page, "password");
    expect((await elsewhere.request.get("/cabinet/api/me")).status()).toBe(401);
    expect((await page.request.get("/cabinet/api/me")).status()).toBe(200);
    await elsewhere.close();
    MEMBER.password = NEW;
  });

  it("a state-changing call without the CSRF token is refused, even from the cabinet's own page", async () => {
    const answer = await page.evaluate(async () => {
      const res = await fetch("/cabinet/api/keys", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "sneaky", scopes: ["text"], daily_budget_microrub: 1 }),
      });
      return { status: res.status, body: (await res.json()) as { error: { code: string } } };
    });
    expect(answer).toMatchObject({ status: 403, body: { error: { code: "csrf_token_invalid" } } });
  });

  it("ran every page within its content security policy (no inline code, nothing from elsewhere)", () => {
    expect(policyViolations).toEqual([]);
  });

  it("the session cookie does not work as an API key", async () => {
    const session = (await member.cookies()).find((c) => c.name === "meter_session")!.value;
    const err = await new Anthropic({ apiKey: session, baseURL: sut.url, maxRetries: 0 }).models.list().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
    const asCookie = await fetch(`${sut.url}/v1/models`, { headers: { cookie: `meter_session=${session}` } });
    expect(asCookie.status).toBe(401);
    // ...while it still is a session.
    expect((await page.request.get("/cabinet/api/me")).status()).toBe(200);
  });
});

async function expectText(locator: Locator, text: string): Promise<void> {
  await waitFor(async () => ((await locator.textContent()) ?? "").includes(text), `"${text}" in ${locator.toString()}`);
}

/** One CSV line's cells (RFC 4180 quoting). */
function csvCells(line: string): string[] {
  const cells: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted && c === '"' && line[i + 1] === '"') {
      cell += '"';
      i++;
    } else if (c === '"') quoted = !quoted;
    else if (c === "," && !quoted) {
      cells.push(cell);
      cell = "";
    } else cell += c;
  }
  return [...cells, cell];
}

function sha256(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}
