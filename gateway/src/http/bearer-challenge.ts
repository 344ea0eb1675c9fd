import type { ErrorRequestHandler } from "express";
import { AppError } from "@meter/service-kit";

/**
 * Every 401 names the scheme it wants (RFC 9110, RFC 6750): `Bearer`, with `invalid_token` when a key was
 * given and refused. MCP clients read a 401 without it as a server that wants OAuth and start a sign-in
 * flow instead of showing the error; the body stays the API's error.
 */
export function bearerChallenge(): ErrorRequestHandler {
  return (err, _req, res, next) => {
    if (err instanceof AppError && err.status === 401) {
      res.setHeader("www-authenticate", err.code === "invalid_api_key" ? 'Bearer realm="meter", error="invalid_token"' : 'Bearer realm="meter"');
    }
    next(err);
  };
}
