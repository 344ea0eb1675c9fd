import { Agent, type ClientRequest, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { createProxyMiddleware } from "http-proxy-middleware";
import type { RequestHandler } from "express";
import { AppError, errorBody, type Logger } from "@meter/service-kit";

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

/**
 * Errors raised before a connection to the service existed: its name did not resolve (a container
 * being restarted drops out of the cluster's DNS), no route, or nothing listening. The request never
 * left the gateway, so nothing can have been reserved. Anything else may have reached the service.
 */
const NEVER_CONNECTED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL"]);

/**
 * One keep-alive proxy per service. The body is forwarded as received (never re-serialised). When the
 * service cannot be reached nothing happened there: 503. When the connection breaks after a paid
 * request was sent, money may already be reserved or spent: the answer is 202 pending, and the client
 * retries with the same Idempotency-Key.
 */
export function serviceProxy(name: string, target: string, logger: Logger): RequestHandler {
  const agent = new Agent({ keepAlive: true, maxSockets: 512, keepAliveMsecs: 10_000 });
  const proxy = createProxyMiddleware<IncomingMessage, ServerResponse>({
    target,
    agent,
    changeOrigin: false,
    xfwd: true,
    proxyTimeout: 180_000,
    on: {
      proxyReq: (proxyReq: ClientRequest, _req, res) => {
        const raw = (res as unknown as { locals: Express.Locals }).locals.rawBody;
        if (raw) {
          proxyReq.setHeader("content-length", raw.length);
          proxyReq.write(raw);
        }
      },
      error: (err: Error, req, resOrSocket: ServerResponse | Socket) => {
        const res = resOrSocket as ServerResponse & { locals?: Express.Locals };
        if (typeof res.writeHead !== "function" || res.headersSent) {
          res.destroy?.();
          return;
        }
        const code = (err as { code?: string }).code;
        const requestId = (req as { requestId?: string }).requestId ?? "";
        res.setHeader("x-request-id", requestId);
        res.setHeader("content-type", "application/json");
        if (!NEVER_CONNECTED.has(code ?? "") && res.locals?.paid) {
          logger.warn({ err, requestId, service: name }, "lost the service's answer to a paid request; answering pending");
          res.writeHead(202, { "retry-after": "2" });
          res.end(
            JSON.stringify({
              id: requestId,
              type: "pending",
              status: "reconciling",
              billing: null,
              message: "the outcome is not known yet; retry with the same Idempotency-Key and body",
            }),
          );
          return;
        }
        logger.warn({ err, requestId, service: name }, "service unavailable");
        const e = new AppError("service_unavailable", `the ${name} service is not available; nothing was reserved`);
        res.writeHead(e.status);
        res.end(JSON.stringify(errorBody(e.code, e.message, e.status, requestId)));
      },
    },
  });
  return (req, res, next) => {
    // A body the gateway has read (answering the client's `Expect: 100-continue` itself) is written
    // in the proxyReq hook, which http-proxy skips for a request that still carries `Expect`: the
    // service would wait for a body that never comes. The expectation is met already; drop it.
    if (res.locals.rawBody || req.readableEnded) delete req.headers.expect;
    return proxy(req, res, next);
  };
}
