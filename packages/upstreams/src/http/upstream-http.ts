import { Agent, request, type Dispatcher, type FormData } from "undici";
import { deliveryOf, trackSending } from "@meter/service-kit";
import { UpstreamError } from "../upstream-error";
import { upstreamErrorMessage } from "./error-message";

/** A TCP (and TLS) connection that takes longer than this is given up; nothing was sent on it. */
const CONNECT_TIMEOUT_MS = 5_000;
/**
 * A text answer is a few hundred KiB at most; more is a broken upstream, not an answer to wait for. An
 * image answer carries the image in base64 and asks for more (`maxResponseBytes`).
 */
const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/** One keep-alive pool per upstream origin (and answer size cap), shared by every call and adapter that goes there. */
const agents = new Map<string, Agent>();

function agentFor(origin: string, maxResponseBytes: number): Agent {
  const key = `${origin} ${maxResponseBytes}`;
  let agent = agents.get(key);
  if (!agent) {
    agent = new Agent({ connect: { timeout: CONNECT_TIMEOUT_MS }, maxResponseSize: maxResponseBytes });
    agents.set(key, agent);
  }
  return agent;
}

/** Closes the upstream connection pools (graceful shutdown, end of a test file); later calls open new ones. */
export async function closeUpstreamAgents(): Promise<void> {
  const open = [...agents.values()];
  agents.clear();
  await Promise.all(open.map((a) => a.close()));
}

export interface UpstreamPost {
  /** Names the upstream in messages ("anthropic", "openai-chat"...). */
  vendor: string;
  url: string;
  headers: Record<string, string>;
  /** A JSON body, or a multipart form (undici writes its boundary and content type). */
  body: { json: unknown } | { form: FormData };
  timeoutMs: number;
  signal?: AbortSignal;
  /** Values never to repeat in an error message (the API key). */
  secrets: string[];
  /** The largest answer read; a larger one fails the call as `unknown` (it may have run). Default 32 MiB. */
  maxResponseBytes?: number;
}

/**
 * POSTs JSON (or a multipart form) and returns the parsed 2xx JSON body, or throws an UpstreamError
 * whose kind says what may have happened to the money.
 *
 * Whether the request was sent is not guessed from error codes: trackSending sees undici hand the
 * request to a connected socket, right before the first byte is written. A failure before that point
 * (DNS, refused, connect timeout, TLS, an abort while connecting) is `not_sent`; any failure after it
 * without a status line is `unknown`. `timeoutMs` bounds the whole call, answer body included.
 */
export async function postUpstream(call: UpstreamPost): Promise<{ status: number; body: unknown }> {
  const deadline = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    deadline.abort(new Error(`no complete answer within ${call.timeoutMs} ms`));
  }, call.timeoutMs);
  const onCallerAbort = () => deadline.abort(new Error("the call was aborted"));
  if (call.signal?.aborted) onCallerAbort();
  else call.signal?.addEventListener("abort", onCallerAbort, { once: true });

  let written = false;
  const failure = (e: unknown, what: string): UpstreamError => {
    const why = timedOut
      ? `${written ? "no complete answer" : "no connection"} within ${call.timeoutMs} ms`
      : deadline.signal.aborted
        ? "the call was aborted"
        : describe(e);
    const message = scrub(`${what}: ${why}`, call.secrets);
    // The one rule for "was it delivered?", told what the socket tracking saw.
    return new UpstreamError(deliveryOf(e, written) === "unknown" ? "unknown" : "not_sent", `${call.vendor}: ${message}`, undefined, { cause: e, timedOut });
  };

  try {
    let url: URL;
    try {
      url = new URL(call.url);
    } catch (e) {
      throw new UpstreamError("not_sent", `${call.vendor}: invalid upstream URL ${call.url}`, undefined, { cause: e });
    }
    if (deadline.signal.aborted) throw failure(undefined, "not sent");

    const dispatcher = trackSending(agentFor(url.origin, call.maxResponseBytes ?? MAX_RESPONSE_BYTES), () => {
      // An aborted request is still handed a socket, and undici then cancels it before writing.
      if (!deadline.signal.aborted) written = true;
    });

    let res: Dispatcher.ResponseData;
    try {
      res = await untilAborted(
        request(url, {
          method: "POST",
          headers: { ...("json" in call.body ? { "content-type": "application/json" } : {}), accept: "application/json", ...call.headers },
          body: "json" in call.body ? JSON.stringify(call.body.json) : call.body.form,
          dispatcher,
          signal: deadline.signal,
          headersTimeout: call.timeoutMs,
          bodyTimeout: call.timeoutMs,
        }),
        deadline.signal,
        (late) => late.body.destroy(),
      );
    } catch (e) {
      throw failure(e, written ? "no answer" : "could not connect");
    }

    let text: string | undefined;
    let readError: unknown;
    try {
      text = await res.body.text();
    } catch (e) {
      readError = e;
    }

    if (res.statusCode >= 200 && res.statusCode < 300) {
      if (text === undefined) throw failure(readError, `the ${res.statusCode} answer was cut off`);
      try {
        return { status: res.statusCode, body: JSON.parse(text) as unknown };
      } catch (e) {
        throw new UpstreamError("unknown", `${call.vendor}: the ${res.statusCode} answer is not JSON`, res.statusCode, { cause: e });
      }
    }
    const detail = scrub(upstreamErrorMessage(text) ?? `HTTP ${res.statusCode}`, call.secrets);
    const retryAfterMs = retryAfterOf(res.headers["retry-after"]);
    throw new UpstreamError(kindOfStatus(res.statusCode), `${call.vendor}: ${detail}`, res.statusCode, retryAfterMs === undefined ? {} : { retryAfterMs });
  } catch (e) {
    throw e instanceof UpstreamError ? e : failure(e, "unexpected failure");
  } finally {
    clearTimeout(timer);
    call.signal?.removeEventListener("abort", onCallerAbort);
  }
}

/**
 * 408 and 429 are the upstream declining for now; 5xx is its failure: nothing was completed, worth
 * retrying. Any other 4xx (and a 3xx, which only a wrong base_url gets) is a refusal: nothing ran.
 */
export function kindOfStatus(status: number): "rejected" | "failed" {
  return status === 408 || status === 429 || status >= 500 ? "failed" : "rejected";
}

/** Retry-After in seconds or as an HTTP date, in ms from now; undefined when absent or unreadable. */
export function retryAfterOf(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.round(seconds * 1000) : undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/**
 * undici notices an abort that comes while it is still connecting only once the socket is up (or the
 * connect times out); the caller hears of it at once. A response that arrives after all is discarded.
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal, discard: (late: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const onAbort = () => {
      settled = true;
      reject(signal.reason);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        if (settled) discard(value);
        else resolve(value);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        if (!settled) reject(e);
      },
    );
  });
}

function describe(e: unknown): string {
  if (e instanceof AggregateError && e.errors.length > 0) return e.errors.map(describe).join("; ");
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code;
    return typeof code === "string" && !e.message.includes(code) ? `${code} ${e.message}` : e.message;
  }
  return String(e);
}

/** Upstream messages end up in our logs and error bodies; an API key (even a masked one) must not. */
function scrub(message: string, secrets: readonly string[]): string {
  let out = message;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join("[redacted]");
  return out.replace(/\bsk-[A-Za-z0-9_*.-]{4,}/g, "sk-[redacted]").slice(0, 500);
}
