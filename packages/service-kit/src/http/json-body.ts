import express, { type RequestHandler } from "express";
import { UNSIGNED_PAYLOAD } from "@meter/contracts";
import { AppError } from "../app-error";
import { sha256Hex } from "@meter/signing";
import { EMPTY_BODY_SHA256 } from "../internal/request-signature";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** SHA-256 of the JSON body as it arrived, for the signed-digest check. */
      bodySha256?: string;
    }
  }
}

/**
 * JSON bodies only: a body of another type is 415, malformed JSON 400 `invalid_json`, and one over the
 * limit 413 (both mapped by the error middleware). An empty body is allowed and parses as `{}`.
 * Behind requireIdentity, the body must be the one the caller signed, byte for byte.
 */
export function jsonBody(opts: { limit: number | string }): RequestHandler[] {
  const parse = express.json({
    limit: opts.limit,
    type: () => true,
    verify: (req, _res, buf) => {
      (req as express.Request).bodySha256 = sha256Hex(buf);
    },
  });
  const requireJsonType: RequestHandler = (req, _res, next) => {
    if (!hasBody(req.headers)) {
      req.body = {};
      return next();
    }
    const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/json" && !type.endsWith("+json")) {
      return next(new AppError("unsupported_media_type", "the request body must be JSON (Content-Type: application/json)"));
    }
    next();
  };
  const checkSignedDigest: RequestHandler = (req, _res, next) => {
    const signed = req.signedContentSha256;
    if (signed === undefined || signed === UNSIGNED_PAYLOAD) return next();
    if ((req.bodySha256 ?? EMPTY_BODY_SHA256) !== signed) {
      return next(new AppError("authentication_required", "internal authentication failed: the body is not the one signed"));
    }
    next();
  };
  return [requireJsonType, parse, checkSignedDigest];
}

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  if (headers["transfer-encoding"] !== undefined) return true;
  const length = headers["content-length"];
  return length !== undefined && length !== "0";
}
