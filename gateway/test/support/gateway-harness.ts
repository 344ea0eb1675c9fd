import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import path from "node:path";
import { Redis } from "ioredis";
import type { Scope, ServiceName } from "@meter/contracts";
import { closeServer, createLogger, listen, type Logger } from "@meter/service-kit";
import { operatorOf, startServiceProcess, startStack, testKeyEnv, type ServiceProcess, type Stack } from "@meter/testing";
import { compose, type GatewayComposition } from "../../src/composition";
import { loadConfig } from "../../src/config";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

export interface GatewayHarness {
  url: string;
  /** Every gateway process of the harness (`replicas`), all in front of the same billing; url is the first. */
  urls: string[];
  /** The first gateway's internal port: /healthz, /readyz, /metrics. */
  internalUrl: string;
  /** Each gateway's internal port, in the order of `urls`. */
  internalUrls: string[];
  /**
   * One more gateway with the same settings, as a process of its own (main.ts), which a test may
   * SIGKILL; stopped by close() if the test does not.
   */
  startProcess(env?: Record<string, string>): Promise<ServiceProcess>;
  billingUrl: string;
  /** billing-ledger (and whatever else runs) in this process, built by each one's composition root. */
  stack: Stack;
  /** A user, organization with credit, and key with the given scopes. */
  account(opts?: { scopes?: Scope[]; credit?: number; dailyBudget?: number }): Promise<{ key: string; keyId: string; organizationId: string; userId: string }>;
  admin<T = Record<string, unknown>>(method: string, p: string, body?: unknown): Promise<T>;
  /** Takes billing's HTTP port down (connections refused) and brings it back on the same port. */
  stopBillingHttp(): Promise<void>;
  startBillingHttp(): Promise<void>;
  /** Whether every gateway process hears key revocations on the bus. */
  hearingRevocations(): boolean;
  /** Every revocation a gateway process heard on the bus, and when. */
  revocationsHeard(): { replica: number; keyId: string; at: number }[];
  /** In-flight places the keys hold in Redis now: a place comes back just after its answer is sent. */
  keyPlacesHeld(): Promise<number>;
  assertBooksBalance(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Real gateways, built by the gateway's composition root, in front of a real billing-ledger (the test
 * stack's, on its own database and vhost). Services not given are at a port nothing listens on.
 */
export async function startGateway(
  opts: {
    keyCacheTtlMs?: number;
    textLimit?: number;
    rateLimitPerMinute?: number;
    services?: Partial<Record<ServiceName, string>>;
    /** Where the gateways listen for revoked keys, when not at billing's broker (a broker that is down, say). */
    gatewayRabbitmqUrl?: string;
    /** Gateway processes in front of the one billing (default 1). */
    replicas?: number;
    keyMaxInFlight?: number;
    keyInFlightLeaseMs?: number;
    serviceMaxInFlight?: number;
    mediaEnabled?: boolean;
    logger?: Logger;
    /** Settings of billing-ledger's own (e.g. the cabinet's sign-in limits). */
    billingEnv?: Record<string, string>;
    /** TRUST_PROXY (default: unset, no proxy trusted). */
    trustProxy?: string;
    /** More settings of the gateways' own (e.g. the body pace). */
    gatewayEnv?: Record<string, string>;
  } = {},
): Promise<GatewayHarness> {
  const stack = await startStack({ services: ["billing-ledger"], ...(opts.billingEnv ? { env: opts.billingEnv } : {}) });
  const billingUrl = stack.urls["billing-ledger"]!;
  // Services not under test: a port below 1024 nothing here listens on (a freed ephemeral port could be
  // taken meanwhile by another suite's server, which would then answer in their place).
  const nobody = "http://127.0.0.1:1";
  const logger = opts.logger ?? createLogger("gateway-test", "silent");
  const gateways: { composition: GatewayComposition; server: Server; internalServer: Server }[] = [];
  const heard: { replica: number; keyId: string; at: number }[] = [];
  // The harness's own Redis keys: its replicas share them, no other test run sees them, close removes them.
  const redisUrl = opts.gatewayEnv?.REDIS_URL ?? process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  const redisPrefix = `meter-test:${randomUUID()}:`;
  const settings: Record<string, string> = {
    ...testKeyEnv("gateway"),
    ADMIN_TOKEN,
    BILLING_LEDGER_URL: billingUrl,
    TEXT_URL: opts.services?.text ?? nobody,
    MEDIA_JOBS_URL: opts.services?.["media-jobs"] ?? nobody,
    FILES_URL: opts.services?.files ?? nobody,
    MCP_URL: opts.services?.mcp ?? nobody,
    RABBITMQ_URL: opts.gatewayRabbitmqUrl ?? stack.env.RABBITMQ_URL!,
    KEY_CACHE_TTL_MS: String(opts.keyCacheTtlMs ?? 2000),
    TEXT_BODY_LIMIT_BYTES: String(opts.textLimit ?? 10 * 1024 * 1024),
    RATE_LIMIT_PER_MINUTE: String(opts.rateLimitPerMinute ?? 0),
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: redisPrefix,
    MEDIA_ENABLED: String(opts.mediaEnabled ?? false),
    ...(opts.keyMaxInFlight ? { KEY_MAX_IN_FLIGHT: String(opts.keyMaxInFlight) } : {}),
    ...(opts.keyInFlightLeaseMs ? { KEY_IN_FLIGHT_LEASE_MS: String(opts.keyInFlightLeaseMs) } : {}),
    ...(opts.serviceMaxInFlight ? { SERVICE_MAX_IN_FLIGHT: String(opts.serviceMaxInFlight) } : {}),
    ...(opts.trustProxy !== undefined ? { TRUST_PROXY: opts.trustProxy } : {}),
    ...opts.gatewayEnv,
  };
  const processes: ServiceProcess[] = [];
  try {
    for (let replica = 0; replica < (opts.replicas ?? 1); replica++) {
      const config = loadConfig(settings);
      const composition = await compose(config, { logger });
      // Record what each replica hears, then let its key cache act on it.
      const revoke = composition.keys.revoke.bind(composition.keys);
      composition.keys.revoke = (keyId: string) => {
        heard.push({ replica, keyId, at: Date.now() });
        revoke(keyId);
      };
      const server = createServer(composition.app);
      const internalServer = createServer(composition.internalApp);
      gateways.push({ composition, server, internalServer });
      await listen(server, 0, "127.0.0.1");
      await listen(internalServer, 0, "127.0.0.1");
    }
  } catch (e) {
    await stack.close();
    throw e;
  }
  const urlOf = (server: Server) => `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const urls = gateways.map((gw) => urlOf(gw.server));
  const operator = operatorOf(urls[0]!, ADMIN_TOKEN);
  return {
    url: urls[0]!,
    urls,
    internalUrl: urlOf(gateways[0]!.internalServer),
    internalUrls: gateways.map((gw) => urlOf(gw.internalServer)),
    async startProcess(env = {}) {
      const child = await startServiceProcess(
        path.resolve(__dirname, "..", "..", "src", "main.ts"),
        path.resolve(__dirname, "..", "..", ".."),
        { ...settings, GATEWAY_PORT: "0", GATEWAY_INTERNAL_PORT: "0", ...env },
        60_000,
      );
      processes.push(child);
      return child;
    },
    billingUrl,
    stack,
    admin: operator.admin,
    account: (o = {}) =>
      operator.account({
        credit: o.credit ?? 1_000_000,
        ...(o.scopes ? { scopes: o.scopes } : {}),
        ...(o.dailyBudget !== undefined ? { dailyBudget: o.dailyBudget } : {}),
      }),
    stopBillingHttp: () => stack.stopHttp("billing-ledger"),
    startBillingHttp: () => stack.startHttp("billing-ledger"),
    hearingRevocations: () => gateways.every((gw) => gw.composition.hearingRevocations()),
    revocationsHeard: () => [...heard],
    keyPlacesHeld: () =>
      withRedis(redisUrl, async (redis) => {
        let held = 0;
        for await (const keys of redis.scanStream({ match: `${redisPrefix}*:in-flight` })) for (const key of keys as string[]) held += await redis.zcard(key);
        return held;
      }),
    assertBooksBalance: () => stack.assertBooksBalance(),
    async close() {
      for (const child of processes) await child.stop();
      for (const gw of gateways) {
        gw.server.closeAllConnections();
        await closeServer(gw.server);
        await closeServer(gw.internalServer);
        await gw.composition.close();
      }
      await removeRedisKeys(redisUrl, redisPrefix);
      await stack.close();
    },
  };
}

/** Deletes every key under prefix; a Redis that is not there (a test of it being down) has none. */
async function removeRedisKeys(url: string, prefix: string): Promise<void> {
  await withRedis(url, async (redis) => {
    for await (const keys of redis.scanStream({ match: `${prefix}*` })) {
      if ((keys as string[]).length > 0) await redis.del(...(keys as string[]));
    }
  });
}

/** Runs `work` on a connection of its own; a Redis that is not there gives `work` nothing to do (0). */
async function withRedis(url: string, work: (redis: Redis) => Promise<number | void>): Promise<number> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on("error", () => undefined);
  try {
    await redis.connect();
  } catch {
    return 0;
  }
  try {
    return (await work(redis)) ?? 0;
  } finally {
    redis.disconnect();
  }
}
