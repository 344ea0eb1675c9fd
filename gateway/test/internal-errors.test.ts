import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createLogger, createServiceApp, generateInternalKeySet, InternalAuth, Metrics, parseInternalKeys, requireIdentity } from "@meter/service-kit";
import { CookieJar, startCabinetGateway, type CabinetHarness } from "./support/cabinet-harness";

/**
 * A files service deployed with another key set than the gateway's (a misconfigured key): it refuses
 * every call the gateway signs, at its door, as the real services do.
 */
function misconfiguredFiles(): Server {
  const foreign = generateInternalKeySet();
  const auth = new InternalAuth(parseInternalKeys("files", foreign.signingKeys.files, foreign.publicKeys));
  const app = createServiceApp({ logger: createLogger("files", "silent"), metrics: new Metrics("files"), readiness: [] }, (a) => {
    a.use(requireIdentity(auth, { kinds: ["key", "session"], from: ["gateway"] }));
    a.use((_req, res) => {
      res.json({ data: [] });
    });
  });
  return createServer(app);
}

let files: Server;
let h: CabinetHarness;
beforeAll(async () => {
  files = misconfiguredFiles();
  await new Promise<void>((resolve) => files.listen(0, "127.0.0.1", resolve));
  h = await startCabinetGateway({ services: { files: `http://127.0.0.1:${(files.address() as AddressInfo).port}` } });
});
afterAll(async () => {
  await h.close();
  await new Promise((resolve) => files.close(resolve));
});

/** The answer is the contract's internal_error with the request id, and not a word of why. */
async function expectInternalError(res: Response): Promise<void> {
  expect(res.status).toBe(500);
  const text = await res.text();
  expect(JSON.parse(text)).toEqual({
    type: "error",
    error: { code: "internal_error", message: "internal error", type: "api_error", request_id: res.headers.get("x-request-id") },
  });
  expect(text).not.toMatch(/signing key|signature|internal authentication|gateway|files/i);
  expect(res.headers.get("x-meter-internal-refusal")).toBeNull();
}

describe("a service that refuses the gateway's signed identity", () => {
  it("answers a key holder internal_error, not the service's reason", async () => {
    const account = await h.account({ scopes: ["files:read"] });
    const res = await fetch(`${h.url}/v1/files`, { headers: { authorization: `Bearer ${account.key}` } });
    await expectInternalError(res);
  });

  it("answers a cabinet page internal_error, not the service's reason", async () => {
    const account = await h.account();
    const { email } = await h.admin<{ email: string }>("GET", `/admin/v1/users/${account.userId}`);
    const invitation = await h.admin<{ token: string }>("POST", "/admin/v1/invitations", { email, organization_id: account.organizationId });
    const jar = new CookieJar();
    const accepted = await fetch(`${h.url}/cabinet/api/invitations/accept`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: invitation.token, password: "correct horse battery staple" }),
    });
    expect(accepted.status).toBe(201);
    jar.take(accepted);
    await expectInternalError(await fetch(`${h.url}/cabinet/api/files`, { headers: { cookie: jar.header() } }));
  });
});
