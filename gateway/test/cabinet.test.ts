import { randomUUID } from "node:crypto";
import { get as httpGet, type IncomingHttpHeaders } from "node:http";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { ADMIN_TOKEN, CookieJar, startCabinetGateway, type CabinetHarness } from "./support/cabinet-harness";

let h: CabinetHarness;
beforeAll(async () => {
  h = await startCabinetGateway({ billingEnv: { CABINET_SIGN_IN_FREE_FAILURES: "2" } });
});
afterAll(async () => {
  await h.close();
});

const PASSWORD = "correct horse battery staple";

/** A browser: its cookies, and the CSRF header its page would send. */
function browser() {
  const jar = new CookieJar();
  const call = async (method: string, path: string, body?: unknown, opts: { csrf?: string | false; headers?: Record<string, string> } = {}) => {
    const headers: Record<string, string> = { cookie: jar.header(), ...opts.headers };
    const csrf = opts.csrf === undefined ? jar.cookies.get("meter_csrf") : opts.csrf;
    if (csrf) headers["x-csrf-token"] = csrf;
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(h.url + path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    jar.take(res);
    return res;
  };
  return { jar, call };
}

/** A GET whose body stays as sent (fetch would decode it). */
function request(url: string, opts: { headers: Record<string, string> }): Promise<{ headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    httpGet(url, { headers: opts.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    }).on("error", reject);
  });
}

async function admin(method: string, path: string, body?: unknown) {
  const res = await fetch(h.url + path, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { token?: string; id?: string; link_path?: string } };
}

/** A member signed in through an invitation's link, with a key of their own made by the operator. */
async function member() {
  const account = await h.account({ credit: 5_000_000 });
  const user = { body: await h.admin<{ email: string }>("GET", `/admin/v1/users/${account.userId}`) };
  const invitation = await admin("POST", "/admin/v1/invitations", { email: user.body.email, organization_id: account.organizationId });
  expect(invitation.status).toBe(201);
  const b = browser();
  const accepted = await b.call("POST", "/cabinet/api/invitations/accept", { token: invitation.body.token, password: PASSWORD });
  expect(accepted.status).toBe(201);
  return { ...account, email: user.body.email as string, ...b };
}

describe("the pages", () => {
  it("serves the page at every cabinet address, never cached, and its hashed files for a year", async () => {
    for (const path of ["/cabinet", "/cabinet/", "/cabinet/keys", "/cabinet/operator/catalog"]) {
      const res = await fetch(h.url + path);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(res.headers.get("cache-control")).toBe("no-cache");
      expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(await res.text()).toBe(h.bundle.html);
    }
    const script = /src="\/cabinet\/assets\/([^"]+\.js)"/.exec(h.bundle.html)![1]!;
    const asset = await fetch(`${h.url}/cabinet/assets/${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(asset.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect((await asset.arrayBuffer()).byteLength).toBe(h.bundle.assets.get(script)!.body.length);
    expect((await fetch(`${h.url}/cabinet/assets/main-NOTTHERE.js`)).status).toBe(404);
    // Nothing of the bundle comes from elsewhere.
    expect(h.bundle.html).not.toMatch(/https?:\/\//);
  });

  it("serves its script and stylesheet compressed, brotli when accepted, gzip otherwise, plain when neither", async () => {
    const names = [/src="\/cabinet\/assets\/([^"]+\.js)"/, /href="\/cabinet\/assets\/([^"]+\.css)"/].map((re) => re.exec(h.bundle.html)![1]!);
    for (const name of names) {
      const original = h.bundle.assets.get(name)!.body;
      const get = (acceptEncoding: string) => request(`${h.url}/cabinet/assets/${name}`, { headers: { "accept-encoding": acceptEncoding } });
      const br = await get("gzip, deflate, br");
      expect(br.headers["content-encoding"]).toBe("br");
      expect(br.headers.vary).toContain("accept-encoding");
      expect(br.body.length).toBeLessThan(original.length / 2);
      expect(brotliDecompressSync(br.body).equals(original)).toBe(true);
      const gz = await get("gzip");
      expect(gz.headers["content-encoding"]).toBe("gzip");
      expect(gunzipSync(gz.body).equals(original)).toBe(true);
      const plain = await get("identity, br;q=0");
      expect(plain.headers["content-encoding"]).toBeUndefined();
      expect(plain.body.equals(original)).toBe(true);
    }
  });
});

describe("signing in", () => {
  it("an invitation's link sets HttpOnly, SameSite=Strict session cookies under /cabinet; Secure when https", async () => {
    const account = await h.account();
    const email = (await h.admin<{ email: string }>("GET", `/admin/v1/users/${account.userId}`)).email;
    const invitation = await admin("POST", "/admin/v1/invitations", { email });
    expect(invitation.body.link_path).toBe(`/cabinet/welcome#invitation=${invitation.body.token}`);
    const b = browser();
    const res = await b.call("POST", "/cabinet/api/invitations/accept", { token: invitation.body.token, password: PASSWORD });
    expect(res.status).toBe(201);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toEqual({ object: "cabinet_session", role: "member", expires_at: expect.any(String) });
    const cookies = res.headers.getSetCookie();
    const session = cookies.find((c) => c.startsWith("meter_session="))!;
    const csrf = cookies.find((c) => c.startsWith("meter_csrf="))!;
    expect(session).toMatch(/^meter_session=mcs_[A-Za-z0-9_-]{43}; Path=\/cabinet; Max-Age=4319\d; SameSite=Strict; HttpOnly$/);
    expect(csrf).toMatch(/^meter_csrf=[A-Za-z0-9_-]{43}; Path=\/cabinet; Max-Age=4319\d; SameSite=Strict$/);
    expect(JSON.stringify(body)).not.toContain(b.jar.cookies.get("meter_session")!);

    const overHttps = await browser().call("POST", "/cabinet/api/sign-in", { email, password: PASSWORD }, { headers: { "x-forwarded-proto": "https" } });
    expect(overHttps.status).toBe(201);
    expect(overHttps.headers.getSetCookie().every((c) => c.includes("; Secure"))).toBe(true);

    const me = await b.call("GET", "/cabinet/api/me");
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ role: "member", user: { id: account.userId }, organizations: [{ id: account.organizationId }] });
  });

  it("refuses a wrong password, then too many, with Retry-After, through the gateway", async () => {
    const m = await member();
    const other = browser();
    expect((await other.call("POST", "/cabinet/api/sign-in", { email: m.email, password: "wrong wrong" })).status).toBe(401);
    expect((await other.call("POST", "/cabinet/api/sign-in", { email: m.email, password: "wrong again" })).status).toBe(401);
    // Past the two free failures each wait doubles from 1 s. Guess on until the wait is long enough
    // (4 s) that the right password surely comes within it, however slow this machine is.
    const giveUpAt = Date.now() + 30_000;
    let wait = 0;
    while (wait < 4 && Date.now() < giveUpAt) {
      const guess = await other.call("POST", "/cabinet/api/sign-in", { email: m.email, password: "wrong once more" });
      expect([401, 429]).toContain(guess.status);
      wait = guess.status === 429 ? Number(guess.headers.get("retry-after")) : 0;
      if (guess.status === 429 && wait < 4) await new Promise((r) => setTimeout(r, wait * 1000));
    }
    expect(wait).toBeGreaterThanOrEqual(4);
    const limited = await other.call("POST", "/cabinet/api/sign-in", { email: m.email, password: PASSWORD });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await limited.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
    expect(other.jar.cookies.size).toBe(0);
  });

  it("without TRUST_PROXY a client's X-Forwarded-For is ignored: it cannot pick another address", async () => {
    const m = await member();
    const guesser = browser();
    for (let i = 0; i < 2; i++) {
      const res = await guesser.call(
        "POST",
        "/cabinet/api/sign-in",
        { email: m.email, password: `wrong ${i}` },
        { headers: { "x-forwarded-for": `203.0.113.${i}` } },
      );
      expect(res.status).toBe(401);
    }
    // A new X-Forwarded-For is still the same client: throttled, right password or not.
    const dodging = await guesser.call(
      "POST",
      "/cabinet/api/sign-in",
      { email: m.email, password: PASSWORD },
      { headers: { "x-forwarded-for": "198.51.100.99" } },
    );
    expect(dodging.status).toBe(429);
  });

  it("takes only JSON, which a cross-site form cannot send", async () => {
    const res = await fetch(`${h.url}/cabinet/api/sign-in`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "email=a%40b.c&password=x",
    });
    expect(res.status).toBe(415);
  });

  it("the operator signs in with the admin token once and then holds a session, not the token", async () => {
    const wrong = await browser().call("POST", "/cabinet/api/operator/sign-in", { admin_token: "not-the-token-at-all" });
    expect(wrong.status).toBe(401);
    const op = browser();
    expect((await op.call("POST", "/cabinet/api/operator/sign-in", { admin_token: ADMIN_TOKEN })).status).toBe(201);
    expect(op.jar.header()).not.toContain(ADMIN_TOKEN);
    const orgs = await op.call("GET", "/cabinet/api/admin/organizations");
    expect(orgs.status).toBe(200);
    const org = (await (await op.call("POST", "/cabinet/api/admin/organizations", { name: `ops-${randomUUID().slice(0, 6)}` })).json()) as { id: string };
    const credit = await op.call("POST", `/cabinet/api/admin/organizations/${org.id}/credits`, { amount_microrub: 1_500_000, reference: "wire-42" });
    expect(credit.status).toBe(201);
    const noCsrf = await op.call("POST", `/cabinet/api/admin/organizations/${org.id}/credits`, { amount_microrub: 1, reference: "x" }, { csrf: false });
    expect(noCsrf.status).toBe(403);
    expect((await admin("GET", `/admin/v1/organizations/${org.id}/balance`)).body.balance_microrub).toBe(1_500_000);
    // No member pages for the operator.
    expect((await op.call("GET", "/cabinet/api/keys")).status).toBe(403);
  });
});

describe("what a session may do, and what it may not", () => {
  it("refuses every state-changing call without the session's CSRF token", async () => {
    const m = await member();
    const body = { name: "ci", scopes: ["text"], daily_budget_microrub: 1_000_000 };
    const none = await m.call("POST", "/cabinet/api/keys", body, { csrf: false });
    expect(none.status).toBe(403);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe("csrf_token_invalid");
    expect((await m.call("POST", "/cabinet/api/keys", body, { csrf: "forged-token-of-the-right-length-000000000" })).status).toBe(403);
    const other = await member();
    expect((await m.call("POST", "/cabinet/api/keys", body, { csrf: other.jar.cookies.get("meter_csrf")! })).status).toBe(403);
    expect((await m.call("POST", "/cabinet/api/sign-out", {}, { csrf: false })).status).toBe(403);
    const created = await m.call("POST", "/cabinet/api/keys", body);
    expect(created.status).toBe(201);
    expect(((await created.json()) as { key: string }).key).toMatch(/^mtr_/);
  });

  it("a session cookie is not an API key, and an API key is not a session", async () => {
    const m = await member();
    const sessionToken = m.jar.cookies.get("meter_session")!;
    const asBearer = await fetch(`${h.url}/v1/models`, { headers: { authorization: `Bearer ${sessionToken}` } });
    expect(asBearer.status).toBe(401);
    expect(((await asBearer.json()) as { error: { code: string } }).error.code).toBe("invalid_api_key");
    const asCookie = await fetch(`${h.url}/v1/models`, { headers: { cookie: m.jar.header() } });
    expect(asCookie.status).toBe(401);
    const asXApiKey = await fetch(`${h.url}/v1/chat/quote`, {
      method: "POST",
      headers: { "x-api-key": sessionToken, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "x" }] }),
    });
    expect(asXApiKey.status).toBe(401);

    expect((await fetch(`${h.url}/v1/models`, { headers: { authorization: `Bearer ${m.key}` } })).status).toBe(200);
    expect((await fetch(`${h.url}/cabinet/api/me`, { headers: { authorization: `Bearer ${m.key}` } })).status).toBe(401);
    expect((await fetch(`${h.url}/cabinet/api/me`, { headers: { cookie: `meter_session=${m.key}` } })).status).toBe(401);
    // Nor does the admin token open a member's page.
    expect((await fetch(`${h.url}/cabinet/api/me`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(401);
  });

  it("a member's session stays out of the admin API", async () => {
    const m = await member();
    const res = await m.call("GET", "/cabinet/api/admin/organizations");
    expect(res.status).toBe(403);
    expect((await m.call("POST", "/cabinet/api/admin/organizations", { name: "mine now" })).status).toBe(403);
  });

  it("signs out here, or everywhere, and the cookies go with it", async () => {
    const m = await member();
    const second = browser();
    expect((await second.call("POST", "/cabinet/api/sign-in", { email: m.email, password: PASSWORD })).status).toBe(201);
    const out = await m.call("POST", "/cabinet/api/sign-out", {});
    expect(out.status).toBe(200);
    expect(m.jar.cookies.size).toBe(0);
    expect((await second.call("GET", "/cabinet/api/me")).status).toBe(200);
    const third = browser();
    expect((await third.call("POST", "/cabinet/api/sign-in", { email: m.email, password: PASSWORD })).status).toBe(201);
    expect((await third.call("POST", "/cabinet/api/sign-out", { everywhere: true })).status).toBe(200);
    expect((await second.call("GET", "/cabinet/api/me")).status).toBe(401);
  });

  it("changes the password given the current one: this session stays, every other one ends; a wrong one changes nothing", async () => {
    const m = await member();
    const other = browser();
    expect((await other.call("POST", "/cabinet/api/sign-in", { email: m.email, password: PASSWORD })).status).toBe(201);
    const NEW = "a new and longer passphrase";

    const wrong = await m.call("POST", "/cabinet/api/password", { current_password: "not the password", new_password: NEW });
    expect([wrong.status, ((await wrong.json()) as { error: { code: string } }).error.code]).toEqual([401, "invalid_credentials"]);
    const short = await m.call("POST", "/cabinet/api/password", { current_password: PASSWORD, new_password: "short" });
    expect(short.status).toBe(400);
    expect((await m.call("POST", "/cabinet/api/password", { current_password: PASSWORD, new_password: NEW }, { csrf: false })).status).toBe(403);
    expect((await other.call("GET", "/cabinet/api/me")).status).toBe(200);

    const changed = await m.call("POST", "/cabinet/api/password", { current_password: PASSWORD, new_password: NEW });
    expect([changed.status, await changed.json()]).toEqual([200, { object: "password_change", signed_out: 1 }]);
    expect((await m.call("GET", "/cabinet/api/me")).status).toBe(200);
    expect((await other.call("GET", "/cabinet/api/me")).status).toBe(401);
    expect((await browser().call("POST", "/cabinet/api/sign-in", { email: m.email, password: PASSWORD })).status).toBe(401);
    expect((await browser().call("POST", "/cabinet/api/sign-in", { email: m.email, password: NEW })).status).toBe(201);
  });

  it("forwards the ledger as CSV, and says when files or jobs cannot be reached", async () => {
    const m = await member();
    const csv = await m.call("GET", "/cabinet/api/ledger.csv?status=credited");
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-disposition")).toBe(`attachment; filename="ledger-${m.organizationId}.csv"`);
    expect((await csv.text()).split("\r\n")[1]).toContain(",credit,credited,credit,");
    expect((await m.call("GET", "/cabinet/api/files")).status).toBe(503);
    const jobs = await m.call("GET", "/cabinet/api/jobs");
    expect(jobs.status).toBe(503);
    expect(((await jobs.json()) as { error: { code: string } }).error.code).toBe("media_disabled");
  });
});
