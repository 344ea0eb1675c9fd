import { isUtf8 } from "node:buffer";
import type { IncomingMessage } from "node:http";
import type { RequestHandler } from "express";
import { AppError, jsonContentTypeProblem, markRequest } from "@meter/service-kit";
import { DEFAULT_BODY_PACE, watchBodyPace, type BodyPace, type TooSlow } from "./body-pace";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      /** The parsed body, for the few checks the gateway makes on it (e.g. the quoted operation). */
      json?: unknown;
    }
  }
}

/**
 * Buffers a JSON body up to `limit` bytes and checks that it is JSON in UTF-8, so malformed, oversized
 * or slow bodies are refused here (400 `invalid_json`, 413 `payload_too_large`, 415 for another type or
 * charset, 408 `request_timeout`) and never reach a service. The bytes read are what is forwarded, with
 * their length (service-proxy.ts), however they came (chunked or not).
 */
export function jsonBodyGuard(limit: number, pace: BodyPace = DEFAULT_BODY_PACE): RequestHandler[] {
  const readRaw = readBounded(limit, pace);
  const check: RequestHandler = (req, res, next) => {
    const raw = Buffer.isBuffer(req.body) ? req.body : undefined;
    if (!raw) return next();
    if (raw.length === 0) {
      res.locals.rawBody = raw;
      return next();
    }
    const problem = jsonContentTypeProblem(req.headers["content-type"]);
    if (problem) return next(new AppError("unsupported_media_type", problem));
    // Decoding would turn ill-formed bytes into U+FFFD silently: the request would run (and be
    // charged) on text the client never sent, and two different bodies would share one fingerprint.
    if (!isUtf8(raw)) return next(new AppError("invalid_json", "the request body is not valid UTF-8 (JSON bodies are UTF-8, RFC 8259)"));
    try {
      res.locals.json = JSON.parse(raw.toString("utf8"));
    } catch (e) {
      return next(new AppError("invalid_json", `the request body is not valid JSON: ${(e as Error).message}`));
    }
    // `null`, a number or a string is JSON, but no endpoint takes one: a wrong request, not bad JSON.
    if (res.locals.json === null || typeof res.locals.json !== "object") {
      return next(new AppError("invalid_request", "the request body must be a JSON object"));
    }
    res.locals.rawBody = raw;
    markRequest(req, "body.end");
    next();
  };
  const rejectEarly: RequestHandler = (req, _res, next) => {
    markRequest(req, "body.start");
    const declared = Number(req.headers["content-length"] ?? "0");
    if (declared > limit) return next(new AppError("payload_too_large", `the request body exceeds ${limit} bytes`));
    next();
  };
  return [rejectEarly, readRaw, check];
}

/**
 * Reads the body into a Buffer, refusing it with 413 the moment it passes `limit`, or with 408 when it
 * comes too slowly (`pace`): the answer goes out at once and lingeringClose discards the rest of the
 * body within its bounds (express.raw would read a chunked body to its very end before answering). A
 * compressed body is refused: the gateway checks and forwards JSON as it is, byte for byte.
 */
function readBounded(limit: number, pace: BodyPace): RequestHandler {
  return (req, _res, next) => {
    if (!hasBody(req)) return next();
    const encoding = (req.headers["content-encoding"] ?? "identity").trim().toLowerCase();
    if (encoding !== "identity") {
      return next(new AppError("unsupported_media_type", `a ${encoding}-encoded request body is not accepted; send plain JSON`));
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const stopWatching = watchBodyPace(req, { timeoutMs: pace.timeoutMs, minBytesPerSecond: pace.minBytesPerSecond, windowMs: pace.windowMs }, (why) => {
      stop();
      req.pause();
      next(tooSlowError(why, pace));
    });
    const stop = (): void => {
      stopWatching();
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      stop();
      req.pause();
      next(new AppError("payload_too_large", `the request body exceeds ${limit} bytes`));
    };
    const onEnd = (): void => {
      stop();
      req.body = Buffer.concat(chunks, size);
      next();
    };
    // The client went away before its body ended: there is nobody to answer.
    const onClose = (): void => stop();
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("close", onClose);
  };
}

function tooSlowError(why: TooSlow, pace: BodyPace): AppError {
  const message =
    why === "deadline"
      ? `the request body did not arrive within ${pace.timeoutMs} ms`
      : `the request body arrived at under ${pace.minBytesPerSecond} bytes a second over ${pace.windowMs} ms`;
  return new AppError("request_timeout", `${message}; nothing was reserved`);
}

function hasBody(req: IncomingMessage): boolean {
  if (req.headers["transfer-encoding"] !== undefined) return true;
  const length = req.headers["content-length"];
  return length !== undefined && length !== "0";
}
