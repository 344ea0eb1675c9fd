import { z } from "zod";
import { CommonConfig, env, parseConfig, serviceEnv } from "@meter/config";

export const McpConfig = CommonConfig.extend({
  MCP_PORT: serviceEnv.port("mcp"),
  MCP_DATABASE_URL: serviceEnv.databaseUrl("mcp"),
  /** The public API the tools call back, with the caller's own key, so every rule of the HTTP API applies. */
  GATEWAY_URL: serviceEnv.url("gateway"),
  /**
   * Where clients reach the API (the gateway), the origin of the links in tool results. Required in
   * production; a request's Host or X-Forwarded-Host is the client's to choose, so it never decides.
   * Unset outside production: GATEWAY_URL (npm start and the tests reach the gateway there).
   */
  PUBLIC_BASE_URL: env.optionalUrl(),
  /**
   * Browser origins allowed to call /mcp, comma-separated (`https://app.example.com`). A request with
   * any other `Origin` is 403 (MCP streamable HTTP: DNS rebinding); one without `Origin` (every
   * non-browser client) is not affected. Empty: no browser origin is allowed.
   */
  MCP_ALLOWED_ORIGINS: z
    .string()
    .default("")
    .transform((v) =>
      v
        .split(",")
        .map((o) => o.trim())
        .filter((o) => o !== ""),
    )
    .pipe(z.array(z.url().transform((u) => new URL(u).origin))),
  /** The JSON-RPC body limit (spec: 64 KiB); over it 413 before anything is parsed. */
  MCP_BODY_LIMIT_BYTES: env.int(64 * 1024, { min: 1024 }),
  /**
   * The limit of one serialized JSON-RPC response carrying a tool result (spec: 512 KiB); a larger
   * result is stored for download and the response links it with a preview.
   */
  MCP_RESULT_LIMIT_BYTES: env.int(512 * 1024, { min: 1024 }),
  /** Tool calls running at once in this process (spec: 4); over it `mcp_busy`. */
  MCP_MAX_ACTIVE_CALLS_PER_PROCESS: env.int(4, { min: 1 }),
  /** Tool calls running at once per organization across every MCP process (spec: 2); over it `mcp_busy`. */
  MCP_MAX_ACTIVE_CALLS_PER_ORGANIZATION: env.int(2, { min: 1 }),
  /**
   * How long a call's slot outlives its process: a running call renews it every third of this, so a
   * killed process's slots are free again at most this long after it died.
   */
  MCP_LEASE_TTL_MS: env.int(30_000, { min: 1_000 }),
  /** How long a job tool waits for its job before returning it to be polled with get_job. */
  MCP_JOB_WAIT_MS: env.int(20_000, { min: 0, max: 120_000 }),
  /** The longest one public API call may take; above the text endpoints' synchronous window (60 s). */
  MCP_API_TIMEOUT_MS: env.int(150_000, { min: 1_000 }),
  /** Text and JSON results up to this size are put into the tool result; larger ones only as a link. */
  MCP_INLINE_RESULT_BYTES: env.int(16 * 1024, { min: 0, max: 256 * 1024 }),
  /** How long an oversized result stays downloadable (7 days, like uploaded files). */
  MCP_RESULT_TTL_MS: env.int(7 * 24 * 3_600_000, { min: 60_000 }),
  DATABASE_POOL_SIZE: env.int(10, { min: 1 }),
});
export type McpConfig = z.infer<typeof McpConfig>;

const McpProcessConfig = McpConfig.refine((c) => c.NODE_ENV !== "production" || c.PUBLIC_BASE_URL !== undefined, {
  message: "required in production: the origin clients reach the API on, e.g. https://api.example.com (tool results link to it)",
  path: ["PUBLIC_BASE_URL"],
});

export function loadConfig(source: NodeJS.ProcessEnv = process.env): McpConfig {
  return parseConfig(McpProcessConfig, source);
}

/** The origin of the links in tool results: PUBLIC_BASE_URL, else (outside production) the gateway. */
export function publicBaseUrlOf(config: Pick<McpConfig, "PUBLIC_BASE_URL" | "GATEWAY_URL">): string {
  return (config.PUBLIC_BASE_URL ?? config.GATEWAY_URL).replace(/\/+$/, "");
}
