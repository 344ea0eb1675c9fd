import type { RequestHandler } from "express";
import { McpErrors } from "../errors";

/**
 * MCP streamable HTTP: a server must check `Origin` and answer 403 to one it does not trust, so a page
 * in a browser cannot drive the endpoint with a user's credentials (DNS rebinding). A request without
 * `Origin` comes from a non-browser client and passes.
 */
export function originGuard(allowed: readonly string[]): RequestHandler {
  return (req, _res, next) => {
    const origin = req.headers.origin;
    if (origin === undefined) return next();
    next(allowed.includes(normalized(origin)) ? undefined : McpErrors.originNotAllowed(origin));
  };
}

function normalized(origin: string): string {
  try {
    return new URL(origin).origin;
  } catch {
    return origin;
  }
}
