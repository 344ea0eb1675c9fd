import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import type { Response as ExpressResponse } from "express";
import type { Deployable, Identity } from "@meter/contracts";
import { AppError, isInternalRefusal, type InternalAuth } from "@meter/service-kit";

/** Headers of a service's answer that the browser needs (the rest are the service's own business). */
const RELAYED = ["content-type", "content-disposition", "retry-after"];
/** How long a service may take to start answering. */
const TIMEOUT_MS = 15_000;

export interface SignedCall {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Path and query on the service. */
  path: string;
  identity: Identity;
  /** A JSON body exactly as read from the browser (the signature covers these bytes). */
  body?: Buffer | string | undefined;
  requestId: string;
}

/**
 * Calls one service as the gateway, with an identity signed over the call exactly like the public
 * routes' forwarding (service-proxy.ts), and hands the answer back as it came, status, body and the
 * few headers that matter (Retry-After of a refused sign-in, the CSV's file name).
 */
export class SignedCaller {
  constructor(
    private readonly auth: InternalAuth,
    private readonly baseUrl: string,
    private readonly audience: Deployable,
  ) {}

  async fetch(call: SignedCall): Promise<Response> {
    const headers: Record<string, string> = {
      ...this.auth.sign(call.identity, { audience: this.audience, method: call.method, path: call.path, body: call.body ?? "" }),
      "x-request-id": call.requestId,
      accept: "application/json",
    };
    if (call.body !== undefined) headers["content-type"] = "application/json";
    // The limit is on the answer's start, not its end: a long CSV export may stream for longer.
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error(`no answer within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
    let answer: Response;
    try {
      answer = await fetch(this.baseUrl + call.path, { method: call.method, headers, body: call.body, signal: abort.signal });
    } catch (e) {
      // Cabinet calls change nothing paid: whether or not this one arrived, retrying it is safe.
      throw new AppError("service_unavailable", `the ${this.audience} service did not answer; try again`, { cause: e, headers: { "retry-after": "2" } });
    } finally {
      clearTimeout(timer);
    }
    if (isInternalRefusal(answer.headers)) {
      await answer.body?.cancel();
      // Not the browser's doing, so not relayed: the error handler logs it and answers internal_error.
      throw new Error(`${this.audience} refused the gateway's signed identity on ${call.method} ${call.path} (${answer.status})`);
    }
    return answer;
  }

  /** The call, answered to the browser as the service answered it. */
  async relay(res: ExpressResponse, call: SignedCall): Promise<void> {
    const answer = await this.fetch(call);
    res.status(answer.status);
    for (const h of RELAYED) {
      const v = answer.headers.get(h);
      if (v !== null) res.setHeader(h, v);
    }
    if (!answer.body) return void res.end();
    await new Promise<void>((resolve, reject) => {
      const body = Readable.fromWeb(answer.body as WebReadableStream<Uint8Array>);
      body.once("error", reject);
      res.once("close", () => {
        body.destroy();
        resolve();
      });
      body.pipe(res);
    });
  }
}
