import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  createLogger,
  createServiceApp,
  generateInternalKeySet,
  INTERNAL_REFUSAL_HEADER,
  InternalAuth,
  InternalClient,
  Metrics,
  parseInternalKeys,
} from "@meter/service-kit";
import { BillingClient } from "./billing-client";

/**
 * Billing finds a call of this service at fault: it refuses its signed identity, or its body. Neither
 * is the public client's doing, so a service passing the refusal on would hand a client its internals
 * (and tell a key holder their key is unknown). The service answers internal_error instead.
 */
let billingStub: Server;
let service: Server;
let http: InternalClient;

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

beforeAll(async () => {
  billingStub = createServer((req, res) => {
    req.resume();
    if (req.url === "/internal/v1/keys/verify") {
      res.writeHead(401, { "content-type": "application/json", [INTERNAL_REFUSAL_HEADER]: "1" });
      res.end(JSON.stringify({ type: "error", error: { code: "authentication_required", message: "internal authentication failed" } }));
      return;
    }
    res.writeHead(400, { "content-type": "application/json" });
    res.end(JSON.stringify({ type: "error", error: { code: "invalid_request", message: "ops.0.hold_id: Invalid UUID (internal field)" } }));
  });
  const keys = generateInternalKeySet();
  const auth = new InternalAuth(parseInternalKeys("text", keys.signingKeys.text, keys.publicKeys));
  http = new InternalClient({ baseUrl: await listen(billingStub), auth, audience: "billing-ledger" });
  const billing = new BillingClient(http);
  const app = createServiceApp({ logger: createLogger("text", "silent"), metrics: new Metrics("text"), readiness: [] }, (a) => {
    a.get("/verify", async (_req, res) => {
      res.json({ identity: await billing.verifyKey("mtr_whatever") });
    });
    a.get("/catalog", async (_req, res) => {
      res.json(await billing.catalog());
    });
  });
  service = createServer(app);
  await listen(service);
});
afterAll(async () => {
  await http.close();
  billingStub.close();
  service.close();
});

async function expectInternalError(path: string): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${(service.address() as AddressInfo).port}${path}`);
  expect(res.status).toBe(500);
  const body = (await res.json()) as { error: { code: string; message: string; request_id: string } };
  expect(body.error).toEqual({ code: "internal_error", message: "internal error", type: "api_error", request_id: res.headers.get("x-request-id") });
}

it("a refused identity is an internal error, not an unknown key", async () => {
  await expectInternalError("/verify");
});

it("billing's 400 about a call this service built is an internal error, not the client's invalid_request", async () => {
  await expectInternalError("/catalog");
});
