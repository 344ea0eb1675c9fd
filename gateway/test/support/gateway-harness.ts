import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createLogger, InternalClient, listen, Metrics, closeServer } from "@meter/service-kit";
import { startBilling, TEST_SECRET, seedAccount, type BillingHarness } from "@meter/billing-ledger/test/support/billing-harness";
import type { Scope } from "@meter/contracts";
import type { Bus, Consumer } from "@meter/messaging";
import { startHoldCommandConsumer } from "@meter/billing-ledger/src/consumers/hold-commands.consumer";
import { createApp } from "../../src/app";
import { KeyVerifier } from "../../src/auth/key-verifier";
import { RateLimiter } from "../../src/auth/rate-limiter";
import type { ServiceName } from "../../src/routes";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

export interface GatewayHarness {
  url: string;
  billing: BillingHarness;
  billingUrl: string;
  /** A user, organization with credit, and key with the given scopes. */
  account(opts?: {
    scopes?: Scope[];
    credit?: number;
    dailyBudget?: number;
  }): Promise<{ key: string; keyId: string; organizationId: string; userId: string }>;
  /** Takes billing's HTTP port down (connections refused) and brings it back on the same port. */
  stopBillingHttp(): Promise<void>;
  startBillingHttp(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A real gateway in front of a real billing-ledger (its own test database), both on ephemeral ports.
 * Services not given are reachable at a port nothing listens on.
 */
export async function startGateway(
  opts: {
    keyCacheTtlMs?: number;
    textLimit?: number;
    rateLimitPerMinute?: number;
    services?: Partial<Record<ServiceName, string>>;
    /** Billing also consumes hold commands from this bus, as its main process does. */
    bus?: Bus;
    mediaEnabled?: boolean;
  } = {},
): Promise<GatewayHarness> {
  const billing = await startBilling();
  let billingServer = createServer(billing.app);
  const billingPort = await listen(billingServer, 0, "127.0.0.1");
  const consumer: Consumer | undefined = opts.bus
    ? await startHoldCommandConsumer(opts.bus, billing.services.holds, createLogger("billing-consumer-test", "silent"))
    : undefined;
  const billingUrl = `http://127.0.0.1:${billingPort}`;
  const nobody = await unusedPort();
  const billingClient = new InternalClient({ baseUrl: billingUrl, secret: TEST_SECRET, identity: { kind: "service", service: "gateway" } });
  const app = createApp({
    logger: createLogger("gateway-test", "silent"),
    metrics: new Metrics("gateway"),
    internalSecret: TEST_SECRET,
    adminToken: ADMIN_TOKEN,
    keys: new KeyVerifier(billingClient, opts.keyCacheTtlMs ?? 2000),
    rateLimiter: new RateLimiter(opts.rateLimitPerMinute ?? 0),
    services: {
      text: `http://127.0.0.1:${nobody}`,
      "media-jobs": `http://127.0.0.1:${nobody}`,
      files: `http://127.0.0.1:${nobody}`,
      mcp: `http://127.0.0.1:${nobody}`,
      ...opts.services,
      "billing-ledger": billingUrl,
    },
    limits: { text: opts.textLimit ?? 10 * 1024 * 1024, json: 1024 * 1024, mcp: 64 * 1024 },
    mediaEnabled: opts.mediaEnabled ?? false,
    readiness: [],
  });
  const server: Server = createServer(app);
  const port = await listen(server, 0, "127.0.0.1");
  return {
    url: `http://127.0.0.1:${port}`,
    billing,
    billingUrl,
    account: (o = {}) =>
      seedAccount(billing, {
        credit: o.credit ?? 1_000_000,
        ...(o.scopes ? { scopes: o.scopes } : {}),
        ...(o.dailyBudget !== undefined ? { dailyBudget: o.dailyBudget } : {}),
      }),
    async stopBillingHttp() {
      billingServer.closeAllConnections();
      await closeServer(billingServer);
    },
    async startBillingHttp() {
      billingServer = createServer(billing.app);
      await listen(billingServer, billingPort, "127.0.0.1");
    },
    async close() {
      await consumer?.stop();
      await closeServer(server);
      if (billingServer.listening) await closeServer(billingServer);
      await billingClient.close();
      await billing.close();
    },
  };
}

async function unusedPort(): Promise<number> {
  const s = createServer();
  await listen(s, 0, "127.0.0.1");
  const { port } = s.address() as AddressInfo;
  await closeServer(s);
  return port;
}
