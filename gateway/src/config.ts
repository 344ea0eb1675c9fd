import { isIP } from "node:net";
import { z } from "zod";
import { CommonConfig, env, parseConfig, serviceEnv } from "@meter/config";
import { GATEWAY_INTERNAL_PORT } from "@meter/contracts";
import { DEFAULT_BODY_PACE } from "./http/body-pace";

/**
 * Bounds on requests in flight: per key across every replica (counted in Redis), per service in each
 * process. Generous, so a few hundred concurrent requests from one key are served, and far below what
 * exhausts a process (sockets, memory for buffered bodies).
 */
export const DEFAULT_IN_FLIGHT = { perKey: 512, perService: 1024 } as const;

export const GatewayConfig = CommonConfig.extend({
  GATEWAY_PORT: serviceEnv.port("gateway"),
  /** `/readyz` and `/metrics` listen here, never on the public port (which answers only `/healthz`). */
  GATEWAY_INTERNAL_PORT: env.port(GATEWAY_INTERNAL_PORT),
  /** The operator's bearer token of /admin/v1: 16 characters locally, 32 random ones in production. */
  ADMIN_TOKEN: env.token(16),
  /**
   * The text service: its one URL (in Kubernetes, its Service), or several replicas' URLs separated by
   * commas, taken in turn, a request never delivered to one being sent to the next (the local
   * two-replica rollout test runs it so).
   */
  TEXT_URL: serviceEnv.urlList("text"),
  MEDIA_JOBS_URL: serviceEnv.url("media-jobs"),
  FILES_URL: serviceEnv.url("files"),
  BILLING_LEDGER_URL: serviceEnv.url("billing-ledger"),
  MCP_URL: serviceEnv.url("mcp"),
  /**
   * How long a verified key is trusted without asking billing again, counted from the start of the
   * lookup. Revocations arrive over RabbitMQ at once; this is how long a revoked key lives without it.
   */
  KEY_CACHE_TTL_MS: env.int(4000, { min: 0, max: 5000 }),
  /**
   * How long the gateway answers `GET /v1/models` from its copy of billing's catalog without asking
   * again. Each `billing.catalog.changed` drops the copy at once; this bounds a change not heard.
   */
  MODELS_CACHE_TTL_MS: env.int(2000, { min: 0, max: 60_000 }),
  /** Revocation events (`billing.key.revoked`); the gateway serves on without the broker. */
  RABBITMQ_URL: env.secretUrl("amqp://guest:guest@127.0.0.1:5672"),
  TEXT_BODY_LIMIT_BYTES: env.int(10 * 1024 * 1024, { min: 1024 }),
  JSON_BODY_LIMIT_BYTES: env.int(1024 * 1024, { min: 1024 }),
  MCP_BODY_LIMIT_BYTES: env.int(64 * 1024, { min: 1024 }),
  /** A JSON body must have arrived whole this long after the gateway began reading it; else 408. */
  BODY_TIMEOUT_MS: env.int(DEFAULT_BODY_PACE.timeoutMs, { min: 100 }),
  /** Each BODY_RATE_WINDOW_MS of a JSON body must bring this many bytes a second on average; else 408. */
  BODY_MIN_BYTES_PER_SECOND: env.int(DEFAULT_BODY_PACE.minBytesPerSecond, { min: 1 }),
  /** The same for upload content, which holds its in-flight place while it streams to the files service. */
  UPLOAD_MIN_BYTES_PER_SECOND: env.int(DEFAULT_BODY_PACE.uploadMinBytesPerSecond, { min: 1 }),
  /** The window body rates are measured over; the first one is a body's grace to get going. */
  BODY_RATE_WINDOW_MS: env.int(DEFAULT_BODY_PACE.windowMs, { min: 100 }),
  /** The media jobs switch; off (the spec's default), every media endpoint answers 503 media_disabled. */
  MEDIA_ENABLED: env.bool(false),
  /** Requests per key in any minute (a sliding window), across every gateway replica; 0 turns it off (the default). */
  RATE_LIMIT_PER_MINUTE: env.int(0, { min: 0 }),
  /**
   * Where the replicas count each key's requests in flight and per minute: `redis://` or, with TLS,
   * `rediss://`, with the password (and ACL user) in the URL; a secret in production.
   */
  REDIS_URL: env.secretUrl("redis://127.0.0.1:6379"),
  /** The CA certificate (PEM file) that signed Redis's, for `rediss://` to a private CA (else the system's CAs). */
  REDIS_TLS_CA_FILE: env.optionalString(),
  /** Prefix of the gateway's Redis keys, so installs (or test runs) sharing one Redis never mix counts. */
  REDIS_KEY_PREFIX: env.string("meter:gateway:"),
  /** Requests of one key in flight at once, across every gateway replica; over it 429 rate_limited. */
  KEY_MAX_IN_FLIGHT: env.int(DEFAULT_IN_FLIGHT.perKey, { min: 1 }),
  /** How long a key's in-flight place outlives a gateway that stopped renewing it (one that died). */
  KEY_IN_FLIGHT_LEASE_MS: env.int(30_000, { min: 1000, max: 600_000 }),
  /** Requests in flight to each service at once (per gateway process); over it 503 service_unavailable. */
  SERVICE_MAX_IN_FLIGHT: env.int(DEFAULT_IN_FLIGHT.perService, { min: 1 }),
  /** The web cabinet's cookies: Secure when the page came over https (`auto`, also behind a proxy saying so), or always, or never. */
  CABINET_SECURE_COOKIES: env.enumOf(["auto", "always", "never"] as const, "auto"),
  /**
   * Which proxies in front of the gateway say who the client is (Express's `trust proxy`): `false` (no
   * proxy: the client is the connection's peer, X-Forwarded-For ignored), a hop count (`1`: the one
   * ingress), or the proxies' addresses and CIDRs, comma-separated. The client address counts sign-ins.
   */
  TRUST_PROXY: z.preprocess((v) => (v === undefined || v === "" ? "false" : v), z.string().transform(parseTrustProxy)),
  /** How long keys' refusals wait in memory before they go to billing-ledger's request log, in one batch. */
  REFUSAL_LOG_FLUSH_MS: env.int(1_000, { min: 50, max: 60_000 }),
  /** Groups of identical refusals waiting at most (per process); past it new ones are dropped and counted. */
  REFUSAL_LOG_BUFFER: env.int(10_000, { min: 100 }),
});
export type GatewayConfig = z.infer<typeof GatewayConfig>;

export function loadConfig(source: NodeJS.ProcessEnv = process.env): GatewayConfig {
  return parseConfig(GatewayConfig, source);
}

/** Express's own names for address ranges, accepted in a TRUST_PROXY list. */
const NAMED_RANGES = new Set(["loopback", "linklocal", "uniquelocal"]);

/**
 * A TRUST_PROXY value as Express's `trust proxy` takes it. `true` (every proxy, so any client could
 * name its own address) is refused: name the hops or the proxies.
 */
function parseTrustProxy(value: string, ctx: z.RefinementCtx): false | number | string[] {
  const v = value.trim().toLowerCase();
  if (v === "false" || v === "0") return false;
  if (/^\d+$/.test(v)) return Number(v);
  const entries = v
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "");
  const bad = entries.filter((e) => !NAMED_RANGES.has(e) && !isAddressOrCidr(e));
  if (v === "true" || entries.length === 0 || bad.length > 0) {
    ctx.addIssue({
      code: "custom",
      message: `must be false, a hop count, or proxy addresses/CIDRs separated by commas${bad.length > 0 ? ` (not an address: ${bad.join(", ")})` : ""}`,
    });
    return z.NEVER;
  }
  return entries;
}

function isAddressOrCidr(entry: string): boolean {
  const [address = "", prefix, ...rest] = entry.split("/");
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}
