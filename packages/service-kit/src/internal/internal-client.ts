import type { Readable } from "node:stream";
import { Agent, request, type Dispatcher } from "undici";
import { pathOf, UNSIGNED_PAYLOAD, type Deployable, type Endpoint, type Identity } from "@meter/contracts";
import type { z } from "zod";
import { deliveryOf, trackSending, type Delivery } from "./delivery";
import { InternalRefusalError, isInternalRefusal } from "./internal-refusal";
import type { InternalAuth } from "./request-signature";
import { mark } from "../timing/request-timings";

export type { Delivery } from "./delivery";

/** No answer could be had: the call was certainly not delivered, or its outcome is unknown. */
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
  auth: InternalAuth;
  /** The deployable behind `baseUrl`: calls are signed for it alone. */
  audience: Deployable;
  /** The identity signed onto calls unless a call passes its own; default: this process as a service. */
  identity?: Identity;
  timeoutMs?: number;
  connections?: number;
}

export interface CallOptions {
  identity?: Identity;
  timeoutMs?: number;
  headers?: Record<string, string>;
}

/**
 * A keep-alive client for one sibling service: every call signed (identity, target, body digest),
 * every failure classified by whether the request could have been delivered, every error answer
 * turned into an InternalHttpError carrying the contract's code (or, when the service refused the
 * call's signed identity, an InternalRefusalError: a fault of this deployment, not of the client).
 */
export class InternalClient {
  private readonly agent: Agent;
  private readonly origin: string;

  constructor(private readonly opts: InternalClientOptions) {
    this.origin = new URL(opts.baseUrl).origin;
    this.agent = new Agent({ connections: opts.connections ?? 64, keepAliveTimeout: 30_000, pipelining: 1, connect: { timeout: 5_000 } });
  }

  /** A typed call to an endpoint of the contracts: the path filled, the answer validated. */
  async send<Req extends z.ZodType | undefined, Res extends z.ZodType>(
    e: Endpoint<Req, Res>,
    input: { params?: Record<string, string>; query?: Record<string, string>; body?: Req extends z.ZodType ? z.input<Req> : undefined } = {},
    opts: CallOptions = {},
  ): Promise<z.infer<Res>> {
    const res = await this.call(e.method, pathOf(e, input.params, input.query), input.body, opts);
    return e.response.parse(res.body) as z.infer<Res>;
  }

  /** A JSON call; the answer's body parsed when it is JSON. */
  async call<T = unknown>(method: Endpoint["method"], path: string, body?: unknown, opts: CallOptions = {}): Promise<{ status: number; body: T }> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const res = await this.exchange(method, path, payload, payload, {
      ...opts,
      headers: { ...opts.headers, ...(payload ? { "content-type": "application/json" } : {}) },
    });
    let text: string;
    try {
      text = await res.body.text();
    } catch (e) {
      throw new InternalCallError(`${method} ${path}: reading the answer failed`, "unknown", { cause: e });
    }
    const parsed: unknown = text.length ? safeJson(text) : undefined;
    if (res.statusCode >= 400) throw httpError(method, path, res, parsed);
    return { status: res.statusCode, body: parsed as T };
  }

  /**
   * A call whose request or answer body is a stream (files). A streamed request body is signed as
   * UNSIGNED-PAYLOAD; the endpoint must accept that. Consume or destroy the answer's body.
   */
  async stream(method: Endpoint["method"], path: string, body: Readable | Buffer | undefined, opts: CallOptions = {}): Promise<Dispatcher.ResponseData> {
    const res = await this.exchange(method, path, body, body === undefined ? undefined : UNSIGNED_PAYLOAD, opts);
    if (res.statusCode >= 400) {
      const text = await res.body.text().catch(() => "");
      throw httpError(method, path, res, safeJson(text));
    }
    return res;
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private async exchange(
    method: Endpoint["method"],
    path: string,
    body: string | Buffer | Readable | undefined,
    signedBody: string | typeof UNSIGNED_PAYLOAD | undefined,
    opts: CallOptions,
  ): Promise<Dispatcher.ResponseData> {
    const timeout = opts.timeoutMs ?? this.opts.timeoutMs ?? 10_000;
    const identity = opts.identity ?? this.opts.identity ?? { kind: "service", service: this.opts.auth.self };
    mark(`call.${this.opts.audience}.sign.start`);
    const headers = { ...opts.headers, ...this.opts.auth.sign(identity, { audience: this.opts.audience, method, path, body: signedBody }) };
    mark(`call.${this.opts.audience}.sign.end`);
    let sent = false;
    try {
      const res = await request(this.origin + path, {
        method,
        headers,
        body,
        dispatcher: trackSending(this.agent, () => (sent = true)),
        headersTimeout: timeout,
        bodyTimeout: timeout,
      });
      mark(`call.${this.opts.audience}.answered`);
      return res;
    } catch (e) {
      throw new InternalCallError(`${method} ${path} failed: ${(e as Error).message}`, deliveryOf(e, sent), { cause: e });
    }
  }
}

function httpError(method: string, path: string, res: Dispatcher.ResponseData, parsed: unknown): InternalHttpError | InternalRefusalError {
  const status = res.statusCode;
  // Not a contract error to pass on: the caller's key or identity is wrong, which its client never caused.
  if (isInternalRefusal(res.headers)) return new InternalRefusalError(status, `${method} ${path} refused this service's internal identity (${status})`);
  const err = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
  return new InternalHttpError(status, err?.code ?? "internal_error", err?.message ?? `${method} ${path} answered ${status}`, parsed);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
