import { createServer } from "node:http";
import { closeServer, createLogger, InternalClient, listen, Metrics, runService } from "@meter/service-kit";
import { loadConfig } from "./config";
import { createApp } from "./app";
import { KeyVerifier } from "./auth/key-verifier";
import { RateLimiter } from "./auth/rate-limiter";

const logger = createLogger("gateway");

runService(logger, async () => {
  const config = loadConfig();
  const billing = new InternalClient({
    baseUrl: config.BILLING_LEDGER_URL,
    secret: config.INTERNAL_SECRET,
    identity: { kind: "service", service: "gateway" },
  });
  const app = createApp({
    logger,
    metrics: new Metrics("gateway"),
    internalSecret: config.INTERNAL_SECRET,
    adminToken: config.ADMIN_TOKEN,
    keys: new KeyVerifier(billing, config.KEY_CACHE_TTL_MS),
    rateLimiter: new RateLimiter(config.RATE_LIMIT_PER_MINUTE),
    services: {
      text: config.TEXT_URL,
      "media-jobs": config.MEDIA_JOBS_URL,
      files: config.FILES_URL,
      "billing-ledger": config.BILLING_LEDGER_URL,
      mcp: config.MCP_URL,
    },
    limits: { text: config.TEXT_BODY_LIMIT_BYTES, json: config.JSON_BODY_LIMIT_BYTES, mcp: config.MCP_BODY_LIMIT_BYTES },
    mediaEnabled: config.MEDIA_ENABLED,
    readiness: [{ name: "billing-ledger", check: async () => void (await billing.call("GET", "/healthz")) }],
  });
  const server = createServer(app);
  server.keepAliveTimeout = 65_000;
  const port = await listen(server, config.GATEWAY_PORT, config.HOST);
  logger.info({ port }, "gateway listening");
  return {
    close: async () => {
      await closeServer(server);
      await billing.close();
    },
  };
});
