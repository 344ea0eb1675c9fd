import { randomUUID } from "node:crypto";
import { CabinetEndpoints, type Identity, type SessionGrant, type SessionIdentity } from "@meter/contracts";
import { holdCalls, seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

const GATEWAY: Identity = { kind: "service", service: "gateway" };
const ADMIN: Identity = { kind: "admin" };
const PASSWORD = "a long enough password";
/** A small clock the tests move: sessions, invitations and the sign-in window are measured against it. */
let now = Date.parse("2026-11-20T10:00:00Z");

let h: BillingHarness;
beforeAll(async () => {
  h = await startBilling({
    clock: () => new Date(now),
    env: {
      CABINET_SIGN_IN_FREE_FAILURES: "3",
      CABINET_SIGN_IN_FREE_FAILURES_PER_ADDRESS: "6",
      CABINET_SIGN_IN_MAX_DELAY_S: "60",
      CABINET_SIGN_IN_WINDOW_S: "600",
    },
  });
});
afterAll(async () => {
  await h.assertBooksBalance();
  await h.close();
});

const ctx = (address = "198.51.100.7") => ({ address, user_agent: "jest" });

async function invite(email: string, organizationId?: string): Promise<{ token: string; link_path: string; user_id: string; id: string }> {
  const res = await h.call("POST", "/admin/v1/invitations", ADMIN, { email, ...(organizationId ? { organization_id: organizationId } : {}) }).expect(201);
  return res.body;
}

async function accept(token: string, password = PASSWORD): Promise<SessionGrant> {
  const res = await h.call("POST", CabinetEndpoints.acceptInvitation.path, GATEWAY, { token, password, ...ctx() }).expect(201);
  return res.body;
}

async function identityOf(grant: SessionGrant): Promise<SessionIdentity> {
  const res = await h.call("POST", CabinetEndpoints.verifySession.path, GATEWAY, { token: grant.token }).expect(200);
  return res.body.identity;
}

function signIn(email: string, password: string, address?: string) {
  return h.call("POST", CabinetEndpoints.signIn.path, GATEWAY, { email, password, ...ctx(address) });
}

/** A member of a funded organization, signed in through an invitation. */
async function member(credit = 10_000_000) {
  const account = await seedAccount(h, { credit });
  const user = await h.call("GET", `/admin/v1/users/${account.userId}`).expect(200);
  const invitation = await invite(user.body.email, account.organizationId);
  const grant = await accept(invitation.token);
  return { ...account, email: user.body.email as string, grant, identity: await identityOf(grant) };
}

describe("invitations and passwords", () => {
  it("an invitation creates the user, adds them to the organization and signs them in once", async () => {
    const org = await h.call("POST", "/admin/v1/organizations", ADMIN, { name: "Invited Co" }).expect(201);
    const email = `new-${randomUUID()}@example.test`;
    const invitation = await invite(email, org.body.id);
    expect(invitation.link_path).toBe(`/cabinet/welcome#invitation=${invitation.token}`);
    expect(invitation.token).toMatch(/^mci_[A-Za-z0-9_-]{43}$/);

    const grant = await accept(invitation.token);
    expect(grant).toMatchObject({ role: "member", token: expect.stringMatching(/^mcs_/) });
    const identity = await identityOf(grant);
    expect(identity).toEqual({ kind: "session", role: "member", session_id: grant.session_id, user_id: invitation.user_id, organization_id: org.body.id });

    const stored = await h.db.user.findUniqueOrThrow({ where: { id: invitation.user_id } });
    expect(stored.passwordHash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(JSON.stringify(await h.db.cabinetInvitation.findMany({ where: { userId: invitation.user_id } }))).not.toContain(invitation.token);

    const again = await h.call("POST", CabinetEndpoints.acceptInvitation.path, GATEWAY, { token: invitation.token, password: PASSWORD, ...ctx() }).expect(410);
    expect(again.body.error.code).toBe("invitation_invalid");
    await signIn(email, PASSWORD).expect(201);
  });

  it("a link expires after a day, and a newer invitation replaces the older link", async () => {
    const email = `late-${randomUUID()}@example.test`;
    const first = await invite(email);
    const second = await invite(email);
    await h.call("POST", CabinetEndpoints.acceptInvitation.path, GATEWAY, { token: first.token, password: PASSWORD, ...ctx() }).expect(410);
    now += 24 * 3_600_000 + 1;
    await h.call("POST", CabinetEndpoints.acceptInvitation.path, GATEWAY, { token: second.token, password: PASSWORD, ...ctx() }).expect(410);
    const listed = await h.call("GET", "/admin/v1/invitations?limit=500").expect(200);
    const statuses = Object.fromEntries((listed.body.data as { id: string; status: string }[]).map((i) => [i.id, i.status]));
    expect([statuses[first.id], statuses[second.id]]).toEqual(["revoked", "expired"]);
    await accept((await invite(email)).token);
  });

  it("refuses a short password, and a re-invitation resets the password and ends the older sessions", async () => {
    const m = await member();
    const short = await h
      .call("POST", CabinetEndpoints.acceptInvitation.path, GATEWAY, { token: (await invite(m.email)).token, password: "short", ...ctx() })
      .expect(400);
    expect(short.body.error.message).toContain("at least 10 characters");
    const reset = await accept((await invite(m.email)).token, "a brand new password");
    await h.call("POST", CabinetEndpoints.verifySession.path, GATEWAY, { token: m.grant.token }).expect(401);
    await h.call("POST", CabinetEndpoints.verifySession.path, GATEWAY, { token: reset.token }).expect(200);
    await signIn(m.email, PASSWORD).expect(401);
    await signIn(m.email, "a brand new password").expect(201);
  });
});

describe("signing in", () => {
  it("takes the email in any case, and says nothing about which half was wrong", async () => {
    const m = await member();
    await signIn(m.email.toUpperCase(), PASSWORD).expect(201);
    const wrong = await signIn(m.email, "not the password").expect(401);
    const nobody = await signIn(`nobody-${randomUUID()}@example.test`, PASSWORD).expect(401);
    expect(wrong.body.error).toMatchObject({ code: "invalid_credentials", message: nobody.body.error.message });
  });

  it("twenty failures from one address do not stop the right password from another address", async () => {
    const m = await member();
    const attacker = `203.0.113.${Math.floor(Math.random() * 200)}`;
    for (let i = 0; i < 20; i++) {
      expect([401, 429]).toContain((await signIn(m.email, `wrong ${i}`, attacker)).status);
      now += 1_000;
    }
    await signIn(m.email, PASSWORD, "198.51.100.200").expect(201);
    // The attacker's address is still slowed down for that account, right password or not.
    const limited = await signIn(m.email, PASSWORD, attacker).expect(429);
    expect(limited.body.error.code).toBe("rate_limited");
    now += 600_001;
  });

  it("slows a wrong-password burst with growing delays, then forgives the address on success", async () => {
    const m = await member();
    const address = "198.51.100.77";
    for (let i = 0; i < 3; i++) await signIn(m.email, `wrong ${i}`, address).expect(401);
    const waits: number[] = [];
    for (let i = 0; i < 8; i++) {
      const limited = await signIn(m.email, `wrong ${i}`, address).expect(429);
      expect(limited.body.error.code).toBe("rate_limited");
      const wait = Number(limited.headers["retry-after"]);
      waits.push(wait);
      now += wait * 1000;
      await signIn(m.email, `wrong again ${i}`, address).expect(401);
    }
    // 1 s, 2 s, 4 s, ... capped at CABINET_SIGN_IN_MAX_DELAY_S.
    expect(waits).toEqual([1, 2, 4, 8, 16, 32, 60, 60]);
    now += 60_000;
    await signIn(m.email, PASSWORD, address).expect(201);
    for (let i = 0; i < 3; i++) await signIn(m.email, `wrong ${i}`, address).expect(401);
    await signIn(m.email, PASSWORD, address).expect(429);
    now += 600_001;
  });

  it("slows one address trying many accounts, not the accounts elsewhere", async () => {
    const address = `192.0.2.${Math.floor(Math.random() * 200)}`;
    for (let i = 0; i < 6; i++) await signIn(`guess-${i}-${randomUUID()}@example.test`, "guess", address).expect(401);
    const limited = await signIn(`guess-${randomUUID()}@example.test`, "guess", address).expect(429);
    expect(limited.headers["retry-after"]).toBe("1");
    const m = await member();
    await signIn(m.email, PASSWORD, address).expect(429);
    await signIn(m.email, PASSWORD, "192.0.2.250").expect(201);
    now += 600_001;
  });

  it("counts an IPv6 client's whole /64 as one address", async () => {
    const m = await member();
    for (let i = 0; i < 3; i++) await signIn(m.email, `wrong ${i}`, `2001:db8:77:1::${i + 1}`).expect(401);
    await signIn(m.email, PASSWORD, "2001:db8:77:1:ffff::9").expect(429);
    await signIn(m.email, PASSWORD, "2001:db8:77:2::1").expect(201);
    now += 600_001;
  });

  it("counts concurrent guesses against each other", async () => {
    // Bursts of 16, several times: an attempt that missed an earlier one still committing got a 4th check.
    for (let round = 0; round < 4; round++) {
      const m = await member();
      const results = await Promise.all(Array.from({ length: 16 }, (_, i) => signIn(m.email, `wrong ${i}`, `198.18.0.${round + 1}`)));
      expect(results.filter((r) => r.status === 401)).toHaveLength(3);
      expect(results.filter((r) => r.status === 429)).toHaveLength(13);
    }
    now += 600_001;
  });
});

describe("sessions", () => {
  it("expire, sign out here or everywhere, and are checked by the gateway only", async () => {
    const m = await member();
    const second = (await signIn(m.email, PASSWORD).expect(201)).body as SessionGrant;
    const third = (await signIn(m.email, PASSWORD).expect(201)).body as SessionGrant;
    await h.call("POST", "/cabinet/v1/session/sign-out", await identityOf(third), {}).expect(200);
    await h.call("POST", CabinetEndpoints.verifySession.path, GATEWAY, { token: third.token }).expect(401);
    await h.call("POST", CabinetEndpoints.verifySession.path, GATEWAY, { token: second.token }).expect(200);
    const everywhere = await h.call("POST", "/cabinet/v1/session/sign-out", m.identity, { everywhere: true }).expect(200);
    expect(everywhere.body.signed_out).toBe(2);
    await h.call("POST", CabinetEndpoints.verifySession.path, GATEWAY, { token: second.token }).expect(401);
    await h.call("GET", "/cabinet/v1/me", m.identity).expect(401);

    const late = (await signIn(m.email, PASSWORD).expect(201)).body as SessionGrant;
    now += 12 * 3_600_000 + 1;
    await h.call("POST", CabinetEndpoints.verifySession.path, GATEWAY, { token: late.token }).expect(401);

    // Text may not ask who a cookie belongs to; an API key is no session.
    await h.call("POST", CabinetEndpoints.verifySession.path, { kind: "service", service: "text" }, { token: late.token }).expect(403);
    await h.call("POST", CabinetEndpoints.verifySession.path, GATEWAY, { token: m.key }).expect(401);
  });

  it("a session is not a key, nor a key a session; members stay out of the admin API", async () => {
    const m = await member();
    await h.call("GET", "/v1/models", m.identity).expect(403);
    const keyIdentity: Identity = { kind: "key", key_id: m.keyId, user_id: m.userId, organization_id: m.organizationId, scopes: ["text"] };
    await h.call("GET", "/cabinet/v1/me", keyIdentity).expect(403);
    const admin = await h.call("GET", "/admin/v1/organizations", m.identity).expect(403);
    expect(admin.body.error.code).toBe("insufficient_scope");
    await h.call("POST", CabinetEndpoints.verifySession.path, GATEWAY, { token: m.key }).expect(401);
  });

  it("the operator's session uses the admin API and has no member pages", async () => {
    const grant = (await h.call("POST", CabinetEndpoints.operatorSession.path, GATEWAY, ctx()).expect(201)).body as SessionGrant;
    const identity = await identityOf(grant);
    expect(identity).toEqual({ kind: "session", role: "operator", session_id: grant.session_id });
    await h.call("GET", "/admin/v1/organizations", identity).expect(200);
    expect((await h.call("GET", "/cabinet/v1/me", identity).expect(200)).body).toMatchObject({ role: "operator", budget_timezone: "UTC" });
    await h.call("GET", "/cabinet/v1/keys", identity).expect(403);
  });
});

describe("the member's pages", () => {
  it("switches only between the member's own organizations", async () => {
    const m = await member();
    const other = await h.call("POST", "/admin/v1/organizations", ADMIN, { name: "Second" }).expect(201);
    await h.call("PUT", "/cabinet/v1/session/organization", m.identity, { organization_id: other.body.id }).expect(404);
    await h.call("POST", `/admin/v1/organizations/${other.body.id}/members`, ADMIN, { user_id: m.userId }).expect(201);
    const me = await h.call("PUT", "/cabinet/v1/session/organization", m.identity, { organization_id: other.body.id }).expect(200);
    expect(me.body.organizations.map((o: { id: string }) => o.id)).toEqual([m.organizationId, other.body.id]);
    expect(await identityOf(m.grant)).toMatchObject({ organization_id: other.body.id });
  });

  it("keeps the member's language for every session of theirs, and refuses one the cabinet does not speak", async () => {
    const m = await member();
    expect((await h.call("GET", "/cabinet/v1/me", m.identity).expect(200)).body.user.locale).toBeNull();
    expect((await h.call("PATCH", "/cabinet/v1/me", m.identity, { locale: "ru" }).expect(200)).body.user).toMatchObject({ id: m.userId, locale: "ru" });
    // Another browser of theirs, signed in afresh, reads the same choice.
    const elsewhere = await identityOf((await signIn(m.email, PASSWORD, "203.0.113.40").expect(201)).body);
    expect((await h.call("GET", "/cabinet/v1/me", elsewhere).expect(200)).body.user.locale).toBe("ru");
    for (const locale of ["de", "RU", "", 7]) {
      const refused = await h.call("PATCH", "/cabinet/v1/me", m.identity, { locale }).expect(400);
      expect(refused.body.error).toMatchObject({
        code: "invalid_request",
        message: expect.stringMatching(/^locale: .*not a language the cabinet speaks: use "en" or "ru"/),
      });
    }
    await h.call("PATCH", "/cabinet/v1/me", m.identity, { locale: "en", theme: "dark" }).expect(400);
    expect((await h.call("GET", "/cabinet/v1/me", m.identity).expect(200)).body.user.locale).toBe("ru");
    // null: the browser's language decides again.
    expect((await h.call("PATCH", "/cabinet/v1/me", elsewhere, { locale: null }).expect(200)).body.user.locale).toBeNull();
    // The operator has no user record of theirs: their language stays in their browser.
    const operator = await identityOf((await h.call("POST", CabinetEndpoints.operatorSession.path, GATEWAY, ctx()).expect(201)).body);
    await h.call("PATCH", "/cabinet/v1/me", operator, { locale: "ru" }).expect(403);
  });

  it("a member who had no organization at sign-in starts in the first one they are added to", async () => {
    const invitation = await invite(`lonely-${randomUUID()}@example.test`);
    const grant = await accept(invitation.token);
    const identity = await identityOf(grant);
    expect((await h.call("GET", "/cabinet/v1/me", identity).expect(200)).body).toMatchObject({ organizations: [], organization_id: null });
    await h.call("GET", "/cabinet/v1/balance", identity).expect(404);
    const org = await h.call("POST", "/admin/v1/organizations", ADMIN, { name: "Late" }).expect(201);
    await h.call("POST", `/admin/v1/organizations/${org.body.id}/members`, ADMIN, { user_id: invitation.user_id }).expect(201);
    expect((await h.call("GET", "/cabinet/v1/me", identity).expect(200)).body.organization_id).toBe(org.body.id);
    await h.call("GET", "/cabinet/v1/balance", await identityOf(grant)).expect(200);
  });

  it("lists the models and their tariffs as a key reads them, to a member of an organization only", async () => {
    const m = await member();
    const keyIdentity: Identity = { kind: "key", key_id: m.keyId, user_id: m.userId, organization_id: m.organizationId, scopes: ["text"] };
    const asKey = (await h.call("GET", "/v1/models", keyIdentity).expect(200)).body;
    expect((await h.call("GET", "/cabinet/v1/models", m.identity).expect(200)).body).toEqual(asKey);

    const operator = await identityOf((await h.call("POST", CabinetEndpoints.operatorSession.path, GATEWAY, ctx()).expect(201)).body as SessionGrant);
    expect((await h.call("GET", "/cabinet/v1/models", operator).expect(403)).body.error.code).toBe("insufficient_scope");
    const lonely = await identityOf(await accept((await invite(`no-org-${randomUUID()}@example.test`)).token));
    await h.call("GET", "/cabinet/v1/models", lonely).expect(404);
  });

  it("creates, lists and revokes the member's own keys, with today's use of each budget", async () => {
    const m = await member();
    const created = await h.call("POST", "/cabinet/v1/keys", m.identity, { name: "laptop", scopes: ["text"], daily_budget_microrub: 5_000_000 }).expect(201);
    expect(created.body.key).toMatch(/^mtr_/);
    const hold = await holdCalls(h).place(created.body.id, 1_200_000);
    expect(hold.status).toBe(200);
    await holdCalls(h).settle(String(hold.body.hold_id), 700_000);

    const list = await h.call("GET", "/cabinet/v1/keys", m.identity).expect(200);
    const laptop = list.body.data.find((k: { id: string }) => k.id === created.body.id);
    expect(laptop).toMatchObject({ name: "laptop", status: "active", usage: { spent_microrub: 700_000, reserved_microrub: 0, remaining_microrub: 4_300_000 } });
    expect(laptop.key).toBeUndefined();

    const stranger = await member();
    await h.call("POST", `/cabinet/v1/keys/${created.body.id}/revoke`, stranger.identity).expect(404);
    const revoked = await h.call("POST", `/cabinet/v1/keys/${created.body.id}/revoke`, m.identity).expect(200);
    expect(revoked.body.status).toBe("revoked");
    await h.call("POST", "/internal/v1/keys/verify", GATEWAY, { key: created.body.key }).expect(401);
  });

  it("shows the balance, the spend per day by model and operation, and the ledger filtered and as CSV", async () => {
    const m = await member(50_000_000);
    const calls = holdCalls(h);
    const a = await calls.place(m.keyId, 2_000_000);
    const b = await calls.place(m.keyId, 3_000_000);
    const c = await calls.place(m.keyId, 1_000_000);
    await calls.settle(String(a.body.hold_id), 1_500_000);
    await calls.settle(String(b.body.hold_id), 2_500_000);

    const balance = await h.call("GET", "/cabinet/v1/balance", m.identity).expect(200);
    expect(balance.body).toMatchObject({ balance_microrub: 46_000_000, reserved_microrub: 1_000_000, available_microrub: 45_000_000 });

    const spend = await h.call("GET", "/cabinet/v1/spend?days=30", m.identity).expect(200);
    expect(spend.body.days).toHaveLength(30);
    const today = spend.body.days.at(-1);
    expect(today).toBe(new Date(now).toISOString().slice(0, 10));
    expect(spend.body.data).toEqual([{ day: today, model: "m", operation: "text", amount_microrub: 4_000_000, requests: 2 }]);

    const settles = await h.call("GET", "/cabinet/v1/ledger?kind=settle&limit=1", m.identity).expect(200);
    expect(settles.body.data).toHaveLength(1);
    expect(settles.body.data[0]).toMatchObject({ kind: "settle", model: "m", operation: "text", hold_id: b.body.hold_id });
    const next = await h.call("GET", `/cabinet/v1/ledger?kind=settle&limit=1&cursor=${settles.body.next_cursor}`, m.identity).expect(200);
    expect(next.body).toMatchObject({ has_more: false, data: [{ hold_id: a.body.hold_id }] });
    // Ledger entries carry the database's time, not the test's clock.
    const future = new Date(Date.now() + 86_400_000).toISOString();
    expect((await h.call("GET", `/cabinet/v1/ledger?since=${encodeURIComponent(future)}`, m.identity).expect(200)).body.data).toEqual([]);

    const csv = await h.call("GET", "/cabinet/v1/ledger.csv", m.identity).expect(200);
    expect(csv.headers["content-type"]).toBe("text/csv; charset=utf-8");
    const lines = csv.text.trim().split("\r\n");
    expect(lines[0]).toMatch(/^id,created_at,resolved_at,kind,status,description,/);
    // As the page shows them: one line per request and the credit, newest first by time (the holds carry
    // the test's clock, days before the database's time the credit was made at).
    expect(lines.slice(1).map((l) => l.split(",")[4])).toEqual(["credited", "reserved", "charged", "charged"]);
    expect(lines[1]).toContain(",50000000,50.000000,");
    // The status filter applies to the CSV as to the page.
    const charged = (await h.call("GET", "/cabinet/v1/ledger.csv?status=charged", m.identity).expect(200)).text.trim().split("\r\n").slice(1);
    const page = await h.call("GET", "/cabinet/v1/ledger/lines?status=charged", m.identity).expect(200);
    expect(charged.map((l) => Number(l.split(",")[0]))).toEqual(page.body.data.map((l: { id: number }) => l.id));
    expect(charged.map((l) => Number(l.split(",")[10]))).toEqual([-2_500_000, -1_500_000]);
    await h.call("GET", "/cabinet/v1/ledger.csv?kind=settle", m.identity).expect(400);
    await calls.release(String(c.body.hold_id));
  });

  it("shows the ledger one line per request, reserved, charged or released, with signed amounts", async () => {
    const m = await member(20_000_000);
    const calls = holdCalls(h);
    const charged = await calls.place(m.keyId, 2_000_000);
    const released = await calls.place(m.keyId, 3_000_000);
    const reserved = await calls.place(m.keyId, 54_000);
    await calls.settle(String(charged.body.hold_id), 1_500_000);
    await calls.release(String(released.body.hold_id));

    const all = await h.call("GET", "/cabinet/v1/ledger/lines", m.identity).expect(200);
    // Newest first by (created_at, id): the holds carry the test's clock, days before the credit's database time.
    expect(all.body.data.map((l: Record<string, unknown>) => [l.status, l.amount_microrub, l.reserved_microrub, l.hold_id])).toEqual([
      ["credited", 20_000_000, 0, null],
      ["reserved", -54_000, 54_000, reserved.body.hold_id],
      ["released", 0, 3_000_000, released.body.hold_id],
      ["charged", -1_500_000, 2_000_000, charged.body.hold_id],
    ]);
    expect(all.body.data[3]).toMatchObject({ model: "m", operation: "text", resolved_at: expect.any(String) });
    const onlyCharged = await h.call("GET", "/cabinet/v1/ledger/lines?status=charged", m.identity).expect(200);
    expect(onlyCharged.body.data.map((l: { hold_id: string }) => l.hold_id)).toEqual([charged.body.hold_id]);
    const first = await h.call("GET", "/cabinet/v1/ledger/lines?limit=2", m.identity).expect(200);
    const rest = await h.call("GET", `/cabinet/v1/ledger/lines?limit=2&cursor=${first.body.next_cursor}`, m.identity).expect(200);
    expect(rest.body).toMatchObject({ has_more: false, data: [{ status: "released" }, { status: "charged" }] });
    await h.call("GET", "/cabinet/v1/ledger/lines?status=settle", m.identity).expect(400);
    await calls.release(String(reserved.body.hold_id));
  });

  it("refuses a filter it does not know", async () => {
    const m = await member();
    const res = await h.call("GET", "/cabinet/v1/ledger?kind=gift", m.identity).expect(400);
    expect(res.body.error.code).toBe("invalid_request");
  });
});

describe("the operator's lists", () => {
  it("lists organizations with their money, users with their memberships and whether they can sign in", async () => {
    const m = await member(7_000_000);
    const orgs = await h.call("GET", "/admin/v1/organizations?limit=500").expect(200);
    expect(orgs.body.data.find((o: { id: string }) => o.id === m.organizationId)).toMatchObject({
      members: 1,
      balance_microrub: 7_000_000,
      available_microrub: 7_000_000,
    });
    const users = await h.call("GET", "/admin/v1/users?limit=500").expect(200);
    expect(users.body.data.find((u: { id: string }) => u.id === m.userId)).toMatchObject({ has_password: true, organizations: [{ id: m.organizationId }] });
    // An organization's members, and users found by a part of their email.
    const members = await h.call("GET", `/admin/v1/users?organization_id=${m.organizationId}`).expect(200);
    expect(members.body.data.map((u: { id: string }) => u.id)).toEqual([m.userId]);
    const found = await h.call("GET", `/admin/v1/users?q=${encodeURIComponent(m.email.slice(0, 12).toUpperCase())}`).expect(200);
    expect(found.body.data.map((u: { id: string }) => u.id)).toContain(m.userId);
    expect(found.body.data.every((u: { email: string }) => u.email.includes(m.email.slice(0, 12).toLowerCase()))).toBe(true);
  });

  it("finds organizations by name, id, short id or a member's email, a page at a time, newest first", async () => {
    const tag = `Search ${Date.now().toString(36)}`;
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await h.call("POST", "/admin/v1/organizations", ADMIN, { name: `${tag} ${i}_x` }).expect(201)).body.id);
    const first = await h.call("GET", `/admin/v1/organizations?q=${encodeURIComponent(tag.toLowerCase())}&limit=2`).expect(200);
    expect(first.body).toMatchObject({ has_more: true, next_cursor: made[3] });
    expect(first.body.data.map((o: { id: string }) => o.id)).toEqual([made[4], made[3]]);
    const pages = [first.body.data];
    for (let cursor = first.body.next_cursor; cursor;) {
      const next = await h.call("GET", `/admin/v1/organizations?q=${encodeURIComponent(tag)}&limit=2&cursor=${cursor}`).expect(200);
      pages.push(next.body.data);
      cursor = next.body.next_cursor;
    }
    expect(pages.flat().map((o: { id: string }) => o.id)).toEqual([...made].reverse());
    // `_` and `%` are letters here, not wildcards; an id finds its organization.
    expect((await h.call("GET", `/admin/v1/organizations?q=${encodeURIComponent("2_x")}`).expect(200)).body.data.map((o: { id: string }) => o.id)).toEqual([
      made[2],
    ]);
    expect((await h.call("GET", `/admin/v1/organizations?q=${encodeURIComponent("%")}`).expect(200)).body.data).toEqual([]);
    expect((await h.call("GET", `/admin/v1/organizations?q=${made[1]}`).expect(200)).body.data.map((o: { id: string }) => o.id)).toEqual([made[1]]);
    // The short id the pages show, and a member's email (or part of it), find the organization too.
    expect((await h.call("GET", `/admin/v1/organizations?q=${made[3]!.slice(0, 8)}`).expect(200)).body.data.map((o: { id: string }) => o.id)).toEqual([
      made[3],
    ]);
    const m = await member(1_000);
    const byEmail = await h.call("GET", `/admin/v1/organizations?q=${encodeURIComponent(m.email.toUpperCase())}`).expect(200);
    expect(byEmail.body.data.map((o: { id: string }) => o.id)).toEqual([m.organizationId]);
  });

  it("shows one organization's lines and spend per day, key and month over a chosen window", async () => {
    const m = await member(9_000_000);
    const calls = holdCalls(h);
    const a = await calls.place(m.keyId, 2_000_000);
    await calls.settle(String(a.body.hold_id), 1_250_000);
    const lines = await h.call("GET", `/admin/v1/organizations/${m.organizationId}/ledger/lines?status=charged`).expect(200);
    expect(lines.body.data.map((l: { kind: string; amount_microrub: number }) => [l.kind, l.amount_microrub])).toEqual([["request", -1_250_000]]);
    // The budget day is the test clock's.
    const today = new Date(now).toISOString().slice(0, 10);
    const spend = await h.call("GET", `/admin/v1/organizations/${m.organizationId}/spend?from=${today}&to=${today}`).expect(200);
    expect(spend.body.days).toEqual([today]);
    expect(spend.body.by_key).toEqual([{ key_id: m.keyId, key_name: null, amount_microrub: 1_250_000, requests: 1 }]);
    expect(spend.body.months).toHaveLength(12);
    expect(spend.body.months.at(-1)).toEqual({ month: today.slice(0, 7), amount_microrub: 1_250_000, requests: 1 });
    const earlier = await h.call("GET", `/admin/v1/organizations/${m.organizationId}/spend?from=2026-01-01&to=2026-01-31`).expect(200);
    expect(earlier.body).toMatchObject({ data: [], by_key: [] });
    expect(earlier.body.days).toHaveLength(31);
    await h.call("GET", `/admin/v1/organizations/${m.organizationId}/spend?from=2026-02-01&to=2026-01-01`).expect(400);
    await h.call("GET", `/admin/v1/organizations/${m.organizationId}/spend?from=2024-01-01&to=2026-01-01`).expect(400);
    await h.call("GET", `/admin/v1/organizations/00000000-0000-4000-8000-000000000000/spend`).expect(404);
  });

  it("shows a model's recent charges and the holds still placed at its price", async () => {
    const m = await member();
    const calls = holdCalls(h);
    const a = await calls.place(m.keyId, 400);
    const before = await h.call("GET", "/admin/v1/catalog/activity").expect(200);
    const row = before.body.data.find((r: { model: string }) => r.model === "m");
    expect(row.active_holds).toBeGreaterThanOrEqual(1);
    await calls.settle(String(a.body.hold_id), 300);
    const after = (await h.call("GET", "/admin/v1/catalog/activity").expect(200)).body.data.find((r: { model: string }) => r.model === "m");
    expect(after.settled_requests).toBe(row.settled_requests + 1);
    expect(after.settled_microrub).toBe(row.settled_microrub + 300);
  });
});
