import express, { type RequestHandler } from "express";
import { UNSIGNED_PAYLOAD } from "@meter/contracts";
import { internalRefusal } from "../internal/internal-refusal";
import { AppError } from "../app-error";
import { sha256Hex } from "@meter/signing";
import { EMPTY_BODY_SHA256 } from "../internal/request-signature";
import { jsonContentTypeProblem } from "./json-content-type";
import { markRequest, resumeTimings } from "../timing/request-timings";

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
 * JSON bodies only, in UTF-8 and not compressed, as the gateway reads them (jsonContentTypeProblem): a
 * body of another type or charset, or a compressed one, is 415, malformed JSON 400 `invalid_json`,
 * and one over the limit 413 (mapped by the error middleware). An empty body is allowed and parses as `{}`.
 * Behind requireIdentity, the body must be the one the caller signed, byte for byte.
 */
export function jsonBody(opts: { limit: number | string }): RequestHandler[] {
  const parse = express.json({
    limit: opts.limit,
    inflate: false,
    type: () => true,
    verify: (req, _res, buf) => {
      (req as express.Request).bodySha256 = sha256Hex(buf);
    },
  });
  const requireJsonType: RequestHandler = (req, _res, next) => {
    markRequest(req, "body.start");
    if (!hasBody(req.headers)) {
      req.body = {};
      return next();
    }
    const problem = jsonContentTypeProblem(req.headers["content-type"]);
    next(problem ? new AppError("unsupported_media_type", problem) : undefined);
  };
  const checkSignedDigest: RequestHandler = (req, _res, next) => {
    const signed = req.signedContentSha256;
    if (signed === undefined || signed === UNSIGNED_PAYLOAD) return next();
    if ((req.bodySha256 ?? EMPTY_BODY_SHA256) !== signed) {
      return next(internalRefusal("authentication_required", "the body is not the one signed"));
    }
    markRequest(req, "body.end");
    next();
  };
  const resume = resumeTimings();
  return resume ? [requireJsonType, parse, checkSignedDigest, resume] : [requireJsonType, parse, checkSignedDigest];
}

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  if (headers["transfer-encoding"] !== undefined) return true;
  const length = headers["content-length"];
  return length !== undefined && length !== "0";
}
