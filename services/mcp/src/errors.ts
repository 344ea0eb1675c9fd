import type { z } from "zod";
import { McpToolErrorCode, type McpToolError, type Scope } from "@meter/contracts";
import { AppError } from "@meter/service-kit";
import type { ApiResponse } from "./domain/public-api";

/** Refusals of the HTTP door, before any JSON-RPC message is read: the contract's error shape. */
export const McpErrors = {
  notAcceptable: () => new AppError("not_acceptable", "Accept must list both application/json and text/event-stream"),
  originNotAllowed: (origin: string) =>
    new AppError(
      "origin_not_allowed",
      `requests from the browser origin ${JSON.stringify(origin.slice(0, 200))} are not allowed on /mcp (MCP_ALLOWED_ORIGINS)`,
    ),
  resultNotFound: () => new AppError("not_found", "no such result for this API key (results are kept 7 days, for the key that called the tool)"),
  methodNotAllowed: (method: string) =>
    new AppError("method_not_allowed", `${method} is not allowed on /mcp; send JSON-RPC messages with POST`, { headers: { allow: "POST" } }),
};

/**
 * A tool call that ends in a result with `isError: true`: the model reads the code and the message and
 * can act on them. `context` joins the structured result (e.g. the idempotency key of a paid call).
 */
export class ToolFailure extends Error {
  constructor(
    readonly error: McpToolError,
    readonly context: Record<string, unknown> = {},
  ) {
    super(error.message);
    this.name = "ToolFailure";
  }

  with(context: Record<string, unknown>): ToolFailure {
    return new ToolFailure(this.error, { ...this.context, ...context });
  }
}

export const ToolFailures = {
  busy: (limit: "organization" | "process", max: number) =>
    new ToolFailure({
      code: McpToolErrorCode.busy,
      message:
        limit === "organization"
          ? `your organization already has ${max} tool calls running (the limit across all MCP connections); retry when one has finished`
          : `this MCP server is running its maximum of ${max} tool calls; retry shortly`,
      retry_after_s: 1,
      details: { limit, max_active_calls: max },
    }),

  /** A result over the limit that could not be stored for download: repeat the call (same key: charged once). */
  resultNotStored: (sizeBytes: number, limitBytes: number) =>
    new ToolFailure({
      code: McpToolErrorCode.resultTooLarge,
      message: `the result is ${sizeBytes} bytes, over the ${limitBytes}-byte limit of one tool result, and could not be stored for download just now; call the tool again with the same arguments and idempotency_key (charged once)`,
      retry_after_s: 2,
      details: { size_bytes: sizeBytes, limit_bytes: limitBytes },
    }),

  /** `missing`: the scope groups the key satisfies none of (any one scope of a group would do). */
  insufficientScope: (tool: string, missing: readonly (readonly Scope[])[]) =>
    new ToolFailure({
      code: "insufficient_scope",
      message: `${tool} needs the ${missing.map((group) => group.map((s) => `"${s}"`).join(" or ")).join(" and ")} scope on the API key`,
      http_status: 403,
      details: { missing_scopes: missing },
    }),

  invalidArguments: (tool: string, error: z.ZodError) => {
    const first = error.issues[0];
    const where = first?.path.length ? `${first.path.map(String).join(".")}: ` : "";
    return new ToolFailure({ code: "invalid_request", message: `invalid arguments for ${tool}: ${where}${first?.message ?? "invalid"}`, http_status: 400 });
  },

  /** A refusal of the public API, passed on with its own code. */
  fromApi: (res: ApiResponse) => {
    const err = (res.body as { error?: { code?: unknown; message?: unknown; request_id?: unknown } } | undefined)?.error;
    return new ToolFailure({
      code: typeof err?.code === "string" ? err.code : "upstream_error",
      message: typeof err?.message === "string" ? err.message : `the API answered ${res.status}`,
      http_status: res.status,
      ...(typeof err?.request_id === "string" ? { request_id: err.request_id } : {}),
      ...(res.retryAfterS !== undefined ? { retry_after_s: res.retryAfterS } : {}),
    });
  },

  unavailable: (what: string) =>
    new ToolFailure({ code: "service_unavailable", message: `${what} is not reachable right now; nothing was charged, retry shortly`, retry_after_s: 2 }),

  internal: (requestId?: string) =>
    new ToolFailure({
      code: "internal_error",
      message: "the tool failed unexpectedly",
      ...(requestId !== undefined ? { request_id: requestId } : {}),
    }),
};
