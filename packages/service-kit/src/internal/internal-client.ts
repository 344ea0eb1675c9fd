import { Agent, errors as undiciErrors, request } from "undici";
import type { Identity } from "@meter/contracts";
import { signIdentity } from "./identity-signature";

/**
 * Whether a failed call could have reached the other side. Money depends on it: a hold whose request
 * was never delivered certainly does not exist; one whose answer was lost may.
 */
export type Delivery = "not_delivered" | "unknown";

export class InternalCallError extends Error {
  constructor(
    message: string,
    readonly delivery: Delivery,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "InternalCallError";
  }
}

/** A non-2xx answer from a sibling service, with the contract error it carried. */
export class InternalHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
    this.name = "InternalHttpError";
  }
}

export interface InternalClientOptions {
  baseUrl: string;
  secret: string;
  /** The identity signed onto calls unless a call passes its own (e.g. forwarding the key holder). */
  identity: Identity;
  timeoutMs?: number;
  connections?: number;
}

/** A keep-alive JSON client for one sibling service, signing every call with the internal identity. */
export class InternalClient {
  private readonly agent: Agent;
  private readonly origin: string;

  constructor(private readonly opts: InternalClientOptions) {
    this.origin = new URL(opts.baseUrl).origin;
    this.agent = new Agent({
      connections: opts.connections ?? 64,
      keepAliveTimeout: 30_000,
      pipelining: 1,
    });
  }

  async call<T = unknown>(
    method: "GET" | "POST" | "PUT" | "DELETE",
    path: string,
    body?: unknown,
    opts: { identity?: Identity; timeoutMs?: number; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: T }> {
    const timeout = opts.timeoutMs ?? this.opts.timeoutMs ?? 10_000;
    const headers: Record<string, string> = {
      ...opts.headers,
      ...signIdentity(this.opts.secret, opts.identity ?? this.opts.identity, method, path),
    };
    let payload: string | undefined;
    if (body !== undefined) {
      payload = JSON.stringify(body);
      headers["content-type"] = "application/json";
    }
    let res;
    try {
      res = await request(this.origin + path, {
        method,
        headers,
        body: payload,
        dispatcher: this.agent,
        headersTimeout: timeout,
        bodyTimeout: timeout,
      });
    } catch (e) {
      throw new InternalCallError(`${method} ${path} failed: ${(e as Error).message}`, deliveryOf(e), { cause: e });
    }
    let text: string;
    try {
      text = await res.body.text();
    } catch (e) {
      throw new InternalCallError(`${method} ${path}: reading the answer failed`, "unknown", { cause: e });
    }
    const parsed: unknown = text.length ? safeJson(text) : undefined;
    if (res.statusCode >= 400) {
      const err = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
      throw new InternalHttpError(
        res.statusCode,
        err?.code ?? "internal_error",
        err?.message ?? `${method} ${path} answered ${res.statusCode}`,
        parsed,
      );
    }
    return { status: res.statusCode, body: parsed as T };
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Errors that prove the request never left this process or was refused before being read. */
function deliveryOf(e: unknown): Delivery {
  const code = (e as { code?: string }).code;
  if (code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN") return "not_delivered";
  if (e instanceof undiciErrors.ConnectTimeoutError) return "not_delivered";
  return "unknown";
}
