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

/**
 * Fails sign-ins from `address` until it must wait at least 8 s: each wait is sat out so the next failure
 * counts, and the delay doubles (1, 2, 4, 8 s). The long last wait leaves time for the checks after it
 * however slow the machine is; a throttle of 1 s could run out between two requests.
 */
async function failUntilWaiting(address: string, email: string, forwardedFor?: (i: number) => string): Promise<void> {
  let wait = 0;
  for (let i = 0; i < 12 && wait < 8; i++) {
    const r = await signIn(address, email, `wrong ${i}`, forwardedFor?.(i));
    if (r.status === 401) continue;
    expect(r.status).toBe(429);
    wait = Number(r.headers.get("retry-after"));
    if (wait < 8) await new Promise((resolve) => setTimeout(resolve, wait * 1000));
  }
  expect(wait).toBeGreaterThanOrEqual(8);
}

describe("TRUST_PROXY=1: two clients behind the ingress", () => {
  it("get separate throttles: a guesser's failures do not stop the other's right password", async () => {
    const email = await memberEmail();
    await failUntilWaiting("203.0.113.10", email);

    const limited = await signIn("203.0.113.10", email, PASSWORD);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await limited.json()) as { error: { code: string } }).error.code).toBe("rate_limited");

    const other = await signIn("198.51.100.20", email, PASSWORD);
    expect(other.status).toBe(201);
  }, 60_000);

  it("counts the address the ingress saw, not one the client wrote into X-Forwarded-For", async () => {
    const email = await memberEmail();
    await failUntilWaiting("203.0.113.30", email, (i) => `198.51.100.${i}`);
    // Naming the address of a client in good standing changes nothing: still the guesser's own.
    expect((await signIn("203.0.113.30", email, PASSWORD, "198.51.100.40")).status).toBe(429);
    expect((await signIn("198.51.100.40", email, PASSWORD)).status).toBe(201);
  }, 60_000);
});
