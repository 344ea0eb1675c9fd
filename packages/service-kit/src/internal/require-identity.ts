import type { RequestHandler } from "express";
import type { Identity, IdentityKind, KeyIdentity, Scope } from "@meter/contracts";
import { AppError } from "../app-error";
import { verifyIdentity } from "./identity-signature";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by requireIdentity from the signed internal header. */
      identity?: Identity;
    }
  }
}

/**
 * Services accept calls only with a valid signed identity (from the gateway or a sibling service);
 * anything else gets 401, whatever port it came in on.
 */
export function requireIdentity(secret: string, kinds: readonly IdentityKind[]): RequestHandler {
  return (req, _res, next) => {
    const result = verifyIdentity(secret, req.headers, req.method, req.originalUrl);
    if (!result.ok) return next(new AppError("authentication_required", `internal authentication failed: ${result.reason}`));
    if (!kinds.includes(result.identity.kind)) {
      return next(new AppError("insufficient_scope", `a ${result.identity.kind} caller may not use this endpoint`));
    }
    req.identity = result.identity;
    next();
  };
}

/** The key holder behind a public request; throws if the route was not guarded for keys. */
export function keyIdentityOf(req: { identity?: Identity }): KeyIdentity {
  const id = req.identity;
  if (!id || id.kind !== "key") throw new AppError("authentication_required", "an API key is required");
  return id;
}

export function requireScope(identity: KeyIdentity, scope: Scope): void {
  if (!identity.scopes.includes(scope)) {
    throw new AppError("insufficient_scope", `this API key lacks the "${scope}" scope`);
  }
}
