import { randomUUID } from "node:crypto";
import type { RequestHandler } from "express";
import { AnthropicRequestIdHeader, RequestIdHeader } from "@meter/contracts";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      requestId: string;
    }
  }
}

/**
 * Every response carries `x-request-id` (and `request-id`, where Anthropic clients look). The gateway
 * mints it; services reuse the one the gateway sent so a request can be followed through every log.
 */
export function requestId(opts: { trustIncoming: boolean }): RequestHandler {
  return (req, res, next) => {
    const incoming = req.headers[RequestIdHeader];
    const given = typeof incoming === "string" && /^[A-Za-z0-9._:-]{1,128}$/.test(incoming) ? incoming : undefined;
    req.requestId = opts.trustIncoming && given ? given : `req_${randomUUID().replace(/-/g, "")}`;
    res.setHeader(RequestIdHeader, req.requestId);
    res.setHeader(AnthropicRequestIdHeader, req.requestId);
    next();
  };
}
