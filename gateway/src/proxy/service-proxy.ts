import { Agent, type ClientRequest, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { parse as parseUrl } from "node:url";
import { createProxyMiddleware, debugProxyErrorsPlugin, proxyEventsPlugin } from "http-proxy-middleware";
import type { RequestHandler } from "express";
import { AppError, deliveryOf, errorBody, isInternalRefusal, markRequest, type Logger } from "@meter/service-kit";
import { watchBodyPace } from "../http/body-pace";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      /** The body exactly as the client sent it, already checked to be JSON; forwarded byte for byte. */
      rawBody?: Buffer;
      /** The route is paid and idempotent: a lost answer means "outcome unknown", never "failed". */
      paid?: boolean;
      service?: string;
    }
  }
}

/** The buffered body could not be written (the outgoing request had ended already); nothing went out. */
class BodyNotForwardedError extends Error {
  readonly code = "EBODYNOTFORWARDED";
}

/** A streamed body (upload content) came too slowly: the gateway cut its request to the service. */
class BodyTooSlowError extends Error {
  readonly code = "EBODYTOOSLOW";
}

/** How fast a streamed body must arrive while the service reads it (docs/api.md, Limits and overload). */
export interface StreamPace {
  minBytesPerSecond: number;
  windowMs: number;
}

/** Sees every answer of a service on its way to the client (the request log's refusals: RefusalCapture). */
export type AnswerObserver = (proxyRes: IncomingMessage, req: IncomingMessage, res: ServerResponse) => void;

/**
 * A failure that proves nothing reached the service: no connection was ever made (deliveryOf: its name
 * did not resolve, no route, nothing listening; a container being restarted drops out of the cluster's
 * DNS), or a body the gateway gave up on before sending. Nothing can have been reserved.
 */
const neverDelivered = (err: Error): boolean => err instanceof BodyNotForwardedError || deliveryOf(err) === "not_delivered";

/** How long a client told "service unavailable" waits before trying again. */
const UNAVAILABLE_RETRY_AFTER_S = "2";
/** How long a client told "pending" waits before repeating the request with the same Idempotency-Key. */
const PENDING_RETRY_AFTER_S = "2";

/**
 * How long a kept-alive connection to a service may sit unused before the gateway closes it itself.
 * Shorter than the services' SHUTDOWN_DELAY_MS in a deployment (the deployment checks compare them):
 * a service that drains answers with `Connection: close` during that delay, so each connection of the
 * gateway to it is either retired by an answer or closed here first, and none is left idle for the
 * service to close under a request the gateway is just sending.
 */
export const PROXY_IDLE_SOCKET_MS = 2000;

/** The x-forwarded-* headers http-proxy appends to: restored before a retry, so they are not doubled. */
const FORWARDED_HEADERS = ["x-forwarded-for", "x-forwarded-port", "x-forwarded-proto", "x-forwarded-host"] as const;

interface Attempt {
  endpoint: number;
  retried: boolean;
  /** The outgoing request of the current try (http-proxy's error event does not pass it). */
  proxyReq?: ClientRequest;
  /** An earlier try may have reached the service: no later failure can prove that nothing was reserved. */
  mayHaveArrived: boolean;
  /** The service took longer than proxyTimeout: http-proxy aborted the request (a reset, but not a lost race). */
  timedOut?: boolean;
  forwarded: Partial<Record<(typeof FORWARDED_HEADERS)[number], string | string[] | undefined>>;
  next: (err?: unknown) => void;
}
const ATTEMPT = Symbol("proxy attempt");
type AttemptedRequest = IncomingMessage & { [ATTEMPT]?: Attempt };

/**
 * One keep-alive proxy per service. The body is forwarded as received (never re-serialised). `targets`
 * is the service's base URL (in Kubernetes its Service, which spreads new connections over the ready
 * pods), or several replicas' URLs, taken in turn. A request that was never delivered is sent once
 * more, on a new connection to the next endpoint, when its body can be sent again (buffered, or none):
 * a replica that is stopping, or one the balancer has not yet dropped, costs the client nothing. If
 * that fails too: 503, nothing reserved. A paid request whose kept-alive connection was reset before
 * any answer is sent once more too, under its Idempotency-Key (lostOnReusedConnection). When the
 * connection breaks otherwise after a paid request was sent, or that second try fails too, money may
 * already be reserved or spent: the answer is 202 pending, and the client retries with the same
 * Idempotency-Key. Any other lost answer is a 503 that does not claim to know what happened.
 */
export function serviceProxy(
  name: string,
  targets: string | readonly string[],
  logger: Logger,
  streamPace: StreamPace,
  observe?: AnswerObserver,
): RequestHandler {
  const endpoints = typeof targets === "string" ? [targets] : [...targets];
  if (endpoints.length === 0) throw new Error(`no URL for the ${name} service`);
  // No cap on sockets here: admission bounds the requests in flight to each service, so none waits for
  // a socket. One that waited would be ended before its body could be written (writeBufferedBody).
  const agent = new Agent({ keepAlive: true, keepAliveMsecs: 10_000, timeout: PROXY_IDLE_SOCKET_MS });
  const proxies = endpoints.map((target) =>
    createProxyMiddleware<IncomingMessage, ServerResponse>({
      // Parsed here once: http-proxy parses a target given as a string (legacy url.parse) at every request.
      target: parseUrl(target) as unknown as string,
      agent,
      changeOrigin: false,
      xfwd: true,
      // The path goes out as the request has it (forwardedPath made it plain), not through url.parse again.
      toProxy: true,
      // Without the default logger plugin, which builds a URL of the target for every answer to log it
      // through a logger that is not there; the plugins kept are those the proxy needs.
      ejectPlugins: true,
      plugins: [debugProxyErrorsPlugin, proxyEventsPlugin],
      proxyTimeout: 180_000,
      on: {
        proxyReq: (proxyReq: ClientRequest, req, res) => {
          markRequest(req, "proxy.request");
          const attempt = (req as AttemptedRequest)[ATTEMPT];
          if (attempt) {
            attempt.proxyReq = proxyReq;
            proxyReq.once("timeout", () => (attempt.timedOut = true));
          }
          const raw = (res as unknown as { locals: Express.Locals }).locals.rawBody;
          if (raw) writeBufferedBody(proxyReq, raw);
          else if (!hasNoBody(req)) paceStreamedBody(req, proxyReq, streamPace);
        },
        proxyRes: (proxyRes, req, res) => {
          markRequest(req, "proxy.response");
          if (isInternalRefusal(proxyRes.headers)) return answerRefused(proxyRes, req, res, name, logger);
          observe?.(proxyRes, req, res);
          // http-proxy pipes the answer and never hears it broken off: without this, a service that dies
          // mid-answer (a CSV export's failed page) leaves the client waiting for the rest forever.
          proxyRes.once("close", () => {
            if (!proxyRes.complete && !res.writableEnded) res.destroy();
          });
        },
        error: (err: Error, req, resOrSocket: ServerResponse | Socket) => {
          // An event handler: anything thrown here would be uncaught and take the whole gateway down.
          try {
            if (!retryElsewhere(err, req as AttemptedRequest, resOrSocket)) {
              answerFailure(err, req, resOrSocket, name, logger, (req as AttemptedRequest)[ATTEMPT]?.mayHaveArrived ?? false);
            }
          } catch (failure) {
            logger.error({ err: failure, service: name }, "could not answer a failed proxy request");
            resOrSocket.destroy();
          }
        },
      },
    }),
  );
  let turn = 0;

  const retryElsewhere = (err: Error, req: AttemptedRequest, resOrSocket: ServerResponse | Socket): boolean => {
    const attempt = req[ATTEMPT];
    const res = resOrSocket as ServerResponse & { locals?: Express.Locals };
    if (!attempt || attempt.retried || typeof res.writeHead !== "function" || res.headersSent) return false;
    const replayable = res.locals?.rawBody !== undefined || hasNoBody(req);
    const resend = neverDelivered(err) ? replayable : lostOnReusedConnection(err, attempt) && res.locals?.paid === true && res.locals.rawBody !== undefined;
    if (!resend) return false;
    attempt.retried = true;
    attempt.mayHaveArrived ||= !neverDelivered(err);
    attempt.endpoint = (attempt.endpoint + 1) % proxies.length;
    for (const header of FORWARDED_HEADERS) {
      if (attempt.forwarded[header] === undefined) delete req.headers[header];
      else req.headers[header] = attempt.forwarded[header] as string;
    }
    const requestId = (req as { requestId?: string }).requestId;
    if (attempt.mayHaveArrived)
      logger.warn({ err, service: name, requestId }, "a kept-alive connection broke under a paid request; sending it again under its Idempotency-Key");
    else logger.warn({ err, service: name, requestId }, "request never delivered; sending it once more");
    void proxies[attempt.endpoint]!(req as never, res as never, attempt.next);
    return true;
  };

  return (req, res, next) => {
    // A body the gateway has read (answering the client's `Expect: 100-continue` itself) is written
    // in the proxyReq hook, which http-proxy skips for a request that still carries `Expect`: the
    // service would wait for a body that never comes. The expectation is met already; drop it.
    if (res.locals.rawBody || req.readableEnded) delete req.headers.expect;
    // What was read goes out with its length (writeBufferedBody), however it came: a chunked request
    // forwarded with both headers is one the service must refuse (RFC 9112, 6.3).
    if (res.locals.rawBody) delete req.headers["transfer-encoding"];
    markRequest(req, "proxy.start");
    req.url = forwardedPath(req.url ?? "/");
    const endpoint = turn;
    turn = (turn + 1) % proxies.length;
    const h = req.headers;
    const forwarded = {
      "x-forwarded-for": h["x-forwarded-for"],
      "x-forwarded-port": h["x-forwarded-port"],
      "x-forwarded-proto": h["x-forwarded-proto"],
      "x-forwarded-host": h["x-forwarded-host"],
    } satisfies Attempt["forwarded"];
    (req as AttemptedRequest)[ATTEMPT] = { endpoint, retried: false, mayHaveArrived: false, forwarded, next };
    return proxies[endpoint]!(req, res, next);
  };
}

/** A path that url.parse returns unchanged: no character it escapes, no fragment, origin form. */
const PLAIN_PATH = /^\/[A-Za-z0-9\-._~!$&()*+,;=:@/?%]*$/;

/**
 * The path a request is forwarded with: what http-proxy took from url.parse(req.url).path before
 * `toProxy` (an absolute-form target reduced to its path, some characters escaped, a fragment dropped),
 * computed only for the rare path that is not plain already.
 */
export function forwardedPath(url: string): string {
  return PLAIN_PATH.test(url) ? url : (parseUrl(url).path ?? "");
}

/**
 * The connection a request went out on was an idle kept-alive one, and it was reset before any answer:
 * most often the service closed it (idle, or shutting down) just as the request was written, and never
 * read it; but it may have. Only a paid request is sent again then, because every paid route requires
 * an Idempotency-Key: a service that did receive the first one replays its answer, or says it is still
 * running, and nothing is reserved or charged twice.
 */
function lostOnReusedConnection(err: Error, attempt: Attempt): boolean {
  const code = (err as { code?: unknown }).code;
  return attempt.proxyReq?.reusedSocket === true && attempt.timedOut !== true && (code === "ECONNRESET" || code === "EPIPE");
}

/** A request without a body can be sent again as it is; a streamed one (uploads) cannot. */
function hasNoBody(req: IncomingMessage): boolean {
  return req.headers["transfer-encoding"] === undefined && (req.headers["content-length"] === undefined || req.headers["content-length"] === "0");
}

/**
 * A streamed body holds its in-flight place while it arrives, so it must keep a pace: when it comes
 * slower than `pace` (time the service made it wait not counted), the request to the service is cut,
 * which keeps nothing there (an unfinished upload), and the client gets 408 (answerFailure).
 */
function paceStreamedBody(req: IncomingMessage, proxyReq: ClientRequest, pace: StreamPace): void {
  const stop = watchBodyPace(req, pace, () => {
    proxyReq.destroy(new BodyTooSlowError(`the request body arrived at under ${pace.minBytesPerSecond} bytes a second over ${pace.windowMs} ms`));
  });
  proxyReq.once("close", stop);
}

/**
 * http-proxy calls its proxyReq hook when the outgoing request gets a socket, and pipes the incoming
 * request (already read, so empty) into it at once. A request that had to wait for a socket has been
 * ended by then: its headers are out of reach and its body cannot follow. It is destroyed before any
 * byte leaves (the hook runs before the first write) and answered 503; throwing would crash the gateway.
 */
function writeBufferedBody(proxyReq: ClientRequest, raw: Buffer): void {
  if (proxyReq.headersSent) {
    proxyReq.destroy(new BodyNotForwardedError("the request ended before its body could be written"));
    return;
  }
  try {
    proxyReq.setHeader("content-length", raw.length);
    proxyReq.write(raw);
  } catch (err) {
    proxyReq.destroy(err instanceof Error ? err : new BodyNotForwardedError(String(err)));
  }
}

function answerFailure(err: Error, req: IncomingMessage, resOrSocket: ServerResponse | Socket, name: string, logger: Logger, mayHaveArrived: boolean): void {
  const res = resOrSocket as ServerResponse & { locals?: Express.Locals };
  if (typeof res.writeHead !== "function" || res.headersSent) {
    // A socket (no HTTP answer possible), or an answer already under way: all that is left is to cut it.
    resOrSocket.destroy();
    return;
  }
  const requestId = (req as { requestId?: string }).requestId ?? "";
  res.setHeader("x-request-id", requestId);
  res.setHeader("content-type", "application/json");
  if (err instanceof BodyTooSlowError) {
    logger.info({ requestId, service: name }, "cut a streamed request body that came too slowly");
    const e = new AppError("request_timeout", `${err.message}; it was cut off before the service had all of it, send it again (an upload on the same link)`);
    res.writeHead(e.status);
    res.end(JSON.stringify(errorBody(e.code, e.message, e.status, requestId)));
  } else if (neverDelivered(err) && !mayHaveArrived) {
    logger.warn({ err, requestId, service: name }, "service unavailable");
    sendUnavailable(res, requestId, `the ${name} service is not available; nothing was reserved`);
  } else if (res.locals?.paid) {
    logger.warn({ err, requestId, service: name }, "lost the service's answer to a paid request; answering pending");
    res.writeHead(202, { "retry-after": PENDING_RETRY_AFTER_S });
    res.end(JSON.stringify(pendingBody(requestId)));
  } else {
    logger.warn({ err, requestId, service: name }, "lost the service's answer");
    sendUnavailable(res, requestId, `the connection to the ${name} service broke before it answered; the request may have taken effect, retry it`);
  }
}

/**
 * The service refused the identity the gateway signed (a key or deployment fault here, never the
 * client's doing, and refused at its door: nothing was reserved). The client gets internal_error and
 * the request id; the service's answer is dropped, its detail being in the service's log.
 */
function answerRefused(proxyRes: IncomingMessage, req: IncomingMessage, res: ServerResponse, name: string, logger: Logger): void {
  const requestId = (req as { requestId?: string }).requestId ?? "";
  logger.error({ requestId, service: name, status: proxyRes.statusCode }, "the service refused the gateway's signed identity");
  proxyRes.destroy();
  const e = new AppError("internal_error", "internal error");
  res.writeHead(e.status, { "content-type": "application/json", "x-request-id": requestId });
  res.end(JSON.stringify(errorBody(e.code, e.message, e.status, requestId)));
}

function sendUnavailable(res: ServerResponse, requestId: string, message: string): void {
  const e = new AppError("service_unavailable", message);
  res.writeHead(e.status, { "retry-after": UNAVAILABLE_RETRY_AFTER_S });
  res.end(JSON.stringify(errorBody(e.code, e.message, e.status, requestId)));
}

/**
 * The contract's pending object, written by the gateway itself: the service's answer was lost, so the
 * gateway cannot know the estimate and says so with `estimated_cost_microrub: null` rather than invent
 * a number. Whatever was reserved stays reserved; the retry with the same Idempotency-Key and body gets
 * the service's own answer, with its figures.
 */
function pendingBody(requestId: string) {
  return {
    id: requestId,
    type: "pending",
    status: "reconciling",
    billing: { status: "reserved", estimated_cost_microrub: null, cost_microrub: null },
  };
}
