import { z } from "zod";
import { CommonConfig, env, parseConfig } from "@meter/config";

export const GatewayConfig = CommonConfig.extend({
  GATEWAY_PORT: env.port(8080),
  ADMIN_TOKEN: z.string().min(16, "must be at least 16 characters"),
  TEXT_URL: env.url("http://127.0.0.1:8081"),
  MEDIA_JOBS_URL: env.url("http://127.0.0.1:8082"),
  FILES_URL: env.url("http://127.0.0.1:8083"),
  BILLING_LEDGER_URL: env.url("http://127.0.0.1:8084"),
  MCP_URL: env.url("http://127.0.0.1:8085"),
  /** How long a verified key is trusted without asking billing again; a revoked key dies within this. */
  KEY_CACHE_TTL_MS: env.int(2000, { min: 0, max: 5000 }),
  TEXT_BODY_LIMIT_BYTES: env.int(10 * 1024 * 1024, { min: 1024 }),
  JSON_BODY_LIMIT_BYTES: env.int(1024 * 1024, { min: 1024 }),
  MCP_BODY_LIMIT_BYTES: env.int(64 * 1024, { min: 1024 }),
  /** The media jobs switch; off (the spec's default), every media endpoint answers 503 media_disabled. */
  MEDIA_ENABLED: env.bool(false),
  /** Requests per minute per key; 0 turns rate limiting off (the default). */
  RATE_LIMIT_PER_MINUTE: env.int(0, { min: 0 }),
});
export type GatewayConfig = z.infer<typeof GatewayConfig>;

export function loadConfig(source: NodeJS.ProcessEnv = process.env): GatewayConfig {
  return parseConfig(GatewayConfig, source);
}
