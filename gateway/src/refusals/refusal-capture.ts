import type { IncomingMessage, ServerResponse } from "node:http";
import type { ErrorRequestHandler, Request, Response } from "express";
import { ErrorCatalog, LOGGED_REFUSAL_STATUSES, REFUSAL_CODES, type ErrorCode, type LoggedRefusalStatus } from "@meter/contracts";
import { isAppError } from "@meter/service-kit";
import type { RefusalRecorder } from "./refusal-recorder";

const STATUSES = new Set<number>(LOGGED_REFUSAL_STATUSES);
const CODES = new Set<string>(REFUSAL_CODES);
/** An error body is small; an answer longer than this is not read for its code. */
const MAX_BODY = 16 * 1024;

/**
 * Reads the log's own listing refused (a bad cursor, say) would fill the log a client reads to find
 * out what went wrong: those are not recorded.
 */
const NOT_RECORDED = new Set(["GET /v1/usage/requests"]);

/**
 * Which answers are refusals for the request log (docs/api.md "Request log"), and what they say: a
 * request of an API key answered 400, 402, 404, 409, 413, 415, 422 or 429, whether the gateway refused
 * it itself (the body limits, the rate limits) or the service behind it did (validation, the model,
 * the balance and the budget). Nothing was reserved for any of them; none costs more than a look at
 * its status, and a refusal a map update (RefusalRecorder).
 */
export class RefusalCapture {
  constructor(private readonly recorder: RefusalRecorder) {}

  /** Before the error handler: the gateway's own refusals, with their code and message as answered. */
  errors(): ErrorRequestHandler {
    return (err: unknown, req, res, next) => {
      if (isAppError(err) && STATUSES.has(err.status)) this.note(req, res, err.status, err.code, err.message);
      next(err);
    };
  }

  /** The proxy's hook on every service answer: a refusal's body is read beside its way to the client. */
  readonly answer = (proxyRes: IncomingMessage, req: IncomingMessage, res: ServerResponse): void => {
    const status = proxyRes.statusCode ?? 0;
    if (!STATUSES.has(status) || !this.recordable(req as Request, res as Response)) return;
    const chunks: Buffer[] = [];
    let size = 0;
    proxyRes.on("data", (chunk: Buffer) => {
      if (size < MAX_BODY) chunks.push(chunk);
      size += chunk.length;
    });
    proxyRes.once("end", () => {
      const error = size <= MAX_BODY ? errorOf(Buffer.concat(chunks)) : undefined;
      this.note(req as Request, res as Response, status, error?.code, error?.message);
    });
  };

  private recordable(req: Request, res: Response): boolean {
    const identity = res.locals.identity as { kind?: string } | undefined;
    return identity?.kind === "key" && req.route !== undefined && !NOT_RECORDED.has(`${req.method} ${endpointOf(req)}`);
  }

  private note(req: Request, res: Response, status: number, code: unknown, message: unknown): void {
    if (!this.recordable(req, res)) return;
    const known = typeof code === "string" && CODES.has(code) && ErrorCatalog[code as ErrorCode] === status;
    const model = (res.locals.json as { model?: unknown } | undefined)?.model;
    this.recorder.record({
      keyId: (res.locals.identity as { key_id: string }).key_id,
      endpoint: endpointOf(req),
      model: typeof model === "string" ? storable(model, 200) || null : null,
      status: status as LoggedRefusalStatus,
      code: known ? (code as ErrorCode) : firstCodeOf(status),
      message: typeof message === "string" ? storable(message, 500) : `refused with HTTP ${status}`,
      requestId: req.requestId ?? null,
      at: new Date(),
    });
  }
}

/** The route the request took, as the API documents it: `/v1/files/:file_id` -> `/v1/files/{file_id}` (a rest `*model_id` too). */
function endpointOf(req: Request): string {
  return String((req.route as { path: unknown }).path).replace(/[:*](\w+)/g, "{$1}");
}

/** `{error: {code, message}}` of an answer, if it is one. */
function errorOf(body: Buffer): { code?: unknown; message?: unknown } | undefined {
  try {
    const parsed = JSON.parse(body.toString("utf8")) as { error?: { code?: unknown; message?: unknown } };
    return typeof parsed.error === "object" && parsed.error !== null ? parsed.error : undefined;
  } catch {
    return undefined;
  }
}

/** An answer whose body names no code of its status (an MCP transport error): the catalog's first code of that status. */
function firstCodeOf(status: number): ErrorCode {
  return REFUSAL_CODES.find((c) => ErrorCatalog[c] === status)!;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Text PostgreSQL stores: no NUL, no lone surrogate (JSON would carry it, jsonb refuses it), at most `max` characters. */
function storable(s: string, max: number): string {
  return s.slice(0, max).replace(LONE_SURROGATE, "\uFFFD").replaceAll("\u0000", "");
}
