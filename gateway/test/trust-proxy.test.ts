import { startCabinetGateway, type CabinetHarness } from "./support/cabinet-harness";

/** The gateway behind one proxy hop (an ingress), which appends the client's address to X-Forwarded-For. */
let h: CabinetHarness;
beforeAll(async () => {
  h = await startCabinetGateway({ trustProxy: "1" });
});
afterAll(async () => {
  await h.close();
});

const PASSWORD = "correct horse battery staple";

/** What the ingress forwards for a client at `address` that sent `forwardedFor` itself. */
function signIn(address: string, email: string, password: string, forwardedFor?: string) {
  return fetch(`${h.url}/cabinet/api/sign-in`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": forwardedFor ? `${forwardedFor}, ${address}` : address },
    body: JSON.stringify({ email, password }),
  });
}

async function memberEmail(): Promise<string> {
  const account = await h.account();
  const { email } = await h.admin<{ email: string }>("GET", `/admin/v1/users/${account.userId}`);
  const invitation = await h.admin<{ token: string }>("POST", "/admin/v1/invitations", { email });
  const accepted = await fetch(`${h.url}/cabinet/api/invitations/accept`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": "192.0.2.1" },
    body: JSON.stringify({ token: invitation.token, password: PASSWORD }),
  });
  expect(accepted.status).toBe(201);
  return email;
}

describe("TRUST_PROXY=1: two clients behind the ingress", () => {
  it("get separate throttles: twenty failures from one do not stop the other's right password", async () => {
    const email = await memberEmail();
    const statuses = [];
    for (let i = 0; i < 20; i++) statuses.push((await signIn("203.0.113.10", email, `wrong ${i}`)).status);
    expect(statuses.slice(0, 3)).toEqual([401, 401, 401]);
    expect(statuses).toContain(429);

    const other = await signIn("198.51.100.20", email, PASSWORD);
    expect(other.status).toBe(201);

    const limited = await signIn("203.0.113.10", email, PASSWORD);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await limited.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
  });

  it("counts the address the ingress saw, not one the client wrote into X-Forwarded-For", async () => {
    const email = await memberEmail();
    for (let i = 0; i < 3; i++) expect((await signIn("203.0.113.30", email, `wrong ${i}`, `198.51.100.${i}`)).status).toBe(401);
    // Naming the address of a client in good standing changes nothing: still the guesser's own.
    expect((await signIn("203.0.113.30", email, PASSWORD, "198.51.100.40")).status).toBe(429);
    expect((await signIn("198.51.100.40", email, PASSWORD)).status).toBe(201);
  });
});
