import type { Express } from "express";
import { buildCabinet } from "@meter/cabinet-web";
import { BillingEndpoints } from "@meter/contracts";
import { BillingClient } from "@meter/service-clients";
import { createInternalAuth, stepOfStop, InternalClient, Metrics, type InternalAuth, type Logger } from "@meter/service-kit";
import { createApp } from "./app";
import { KeyVerifier } from "./auth/key-verifier";
import { createCabinet } from "./cabinet/cabinet";
import type { GatewayConfig } from "./config";
import { startRevocationListener } from "./consumers/key-revoked.consumer";
import { healthReporter } from "./health/health-report";
import { createInternalApp } from "./http/internal-port";
import { RedisKeyLimits } from "./overload/redis-key-limits";
import { PublishedModels } from "./catalog/published-models";
import { RefusalCapture } from "./refusals/refusal-capture";
import { RefusalRecorder } from "./refusals/refusal-recorder";

export interface GatewayComposition {
  /** The public port: /healthz, the API, the admin API and the cabinet. */
  app: Express;
  /** The internal port: /readyz and /metrics. */
  internalApp: Express;
  keys: KeyVerifier;
  /** Whether this process is subscribed to key revocations on the bus. */
  hearingRevocations(): boolean;
  close(): Promise<void>;
}

/** What tests may replace; main.ts passes only the logger. */
export interface GatewayOverrides {
  logger: Logger;
  auth?: InternalAuth;
}

/**
 * The composition root of the gateway: key verification (cached, revoked at once over the bus), the
 * routes with their limits, the signed forwarding to each service, and the cabinet. The same for
 * main.ts and the tests.
 */
export async function compose(config: GatewayConfig, overrides: GatewayOverrides): Promise<GatewayComposition> {
  const { logger } = overrides;
  const auth = overrides.auth ?? createInternalAuth("gateway", config);
  const billingHttp = new InternalClient({ baseUrl: config.BILLING_LEDGER_URL, auth, audience: "billing-ledger" });
  const metrics = new Metrics("gateway");
  const keys = new KeyVerifier(new BillingClient(billingHttp), config.KEY_CACHE_TTL_MS);
  const models = new PublishedModels(billingHttp, config.MODELS_CACHE_TTL_MS);
  const refusals = new RefusalRecorder({
    send: async (batch) => void (await billingHttp.send(BillingEndpoints.recordRefusals, { body: { refusals: batch } }, { timeoutMs: 5_000 })),
    flushMs: config.REFUSAL_LOG_FLUSH_MS,
    maxGroups: config.REFUSAL_LOG_BUFFER,
    logger,
    metrics,
  }).start();
  // In the background: the gateway serves (on the TTLs alone) while the broker is away.
  const revocations = startRevocationListener({
    url: config.RABBITMQ_URL,
    keys,
    onCatalogChanged: () => models.changed(),
    signing: auth.keys,
    logger,
    metrics,
  });
  // Every replica counts each key's requests in flight and per minute in Redis; the gateway serves on
  // its own counts while Redis is unreachable.
  const keyLimits = await RedisKeyLimits.connect({
    url: config.REDIS_URL,
    caFile: config.REDIS_TLS_CA_FILE,
    prefix: config.REDIS_KEY_PREFIX,
    maxInFlight: config.KEY_MAX_IN_FLIGHT,
    perMinute: config.RATE_LIMIT_PER_MINUTE,
    leaseMs: config.KEY_IN_FLIGHT_LEASE_MS,
    logger,
    metrics,
  });
  const services = {
    text: config.TEXT_URL,
    "media-jobs": config.MEDIA_JOBS_URL,
    files: config.FILES_URL,
    "billing-ledger": config.BILLING_LEDGER_URL,
    mcp: config.MCP_URL,
  };
  const health = healthReporter({ services, brokerUrl: config.RABBITMQ_URL, auth, hearingRevocations: () => revocations.isListening() });
  const cabinet = createCabinet({
    auth,
    adminToken: config.ADMIN_TOKEN,
    // Bundled here, at start, from the source: nothing built is committed or can be stale.
    bundle: await buildCabinet(),
    // Text: any replica serves the operator's routing view, read from the state they share.
    services: { "media-jobs": config.MEDIA_JOBS_URL, files: config.FILES_URL, "billing-ledger": config.BILLING_LEDGER_URL, text: config.TEXT_URL[0] },
    mediaEnabled: config.MEDIA_ENABLED,
    secureCookies: config.CABINET_SECURE_COOKIES,
    jsonLimit: config.JSON_BODY_LIMIT_BYTES,
    maxInFlight: config.SERVICE_MAX_IN_FLIGHT,
    health,
  });
  const app = createApp({
    logger,
    metrics,
    auth,
    adminToken: config.ADMIN_TOKEN,
    keys,
    services,
    limits: { text: config.TEXT_BODY_LIMIT_BYTES, json: config.JSON_BODY_LIMIT_BYTES, mcp: config.MCP_BODY_LIMIT_BYTES },
    bodyPace: {
      timeoutMs: config.BODY_TIMEOUT_MS,
      minBytesPerSecond: config.BODY_MIN_BYTES_PER_SECOND,
      uploadMinBytesPerSecond: config.UPLOAD_MIN_BYTES_PER_SECOND,
      windowMs: config.BODY_RATE_WINDOW_MS,
    },
    inFlight: { perKey: keyLimits, perService: config.SERVICE_MAX_IN_FLIGHT },
    mediaEnabled: config.MEDIA_ENABLED,
    cabinet,
    health,
    trustProxy: config.TRUST_PROXY,
    models,
    refusals: new RefusalCapture(refusals),
  });
  // Ready whenever it runs: a gateway taken out of its load balancer because billing-ledger is down would
  // turn the contract's 503 (with Retry-After, nothing reserved) into the balancer's own error page,
  // and a billing rollout into a whole outage. RabbitMQ is not a condition either, see above.
  const internalApp = createInternalApp({ metrics, logger, readiness: [] });
  return {
    app,
    internalApp,
    keys,
    hearingRevocations: () => revocations.isListening(),
    async close() {
      await stepOfStop("revocations.close()", () => revocations.close());
      await stepOfStop("refusals.close()", () => refusals.close());
      await stepOfStop("billingHttp.close()", () => billingHttp.close());
      keyLimits.close();
    },
  };
}
