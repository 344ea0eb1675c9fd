import type { RequestHandler } from "express";
import { UNSIGNED_PAYLOAD, type Deployable, type Identity, type IdentityKind, type KeyIdentity, type Scope } from "@meter/contracts";
import { AppError } from "../app-error";
import { internalRefusal } from "./internal-refusal";
import type { InternalAuth } from "./request-signature";
import { markRequest } from "../timing/request-timings";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by requireIdentity from the signed internal headers. */
      identity?: Identity;
      /** The deployable that signed the call. */
      caller?: Deployable;
      /** The body digest the caller signed; the body reader compares it (json-body.ts). */
      signedContentSha256?: string;
    }
  }
}

export interface CallerPolicy {
  /** The identities this door accepts. */
  kinds: readonly IdentityKind[];
  /** The deployables that may call it (key, admin and anonymous identities come from the gateway only). */
  from: readonly Deployable[];
  /** The route streams its body, so the caller signs UNSIGNED-PAYLOAD instead of a digest. */
  streamedBody?: boolean;
}

/**
 * A service's door: only a call signed by a deployable on the `from` list, for this process, with an
 * identity of an accepted kind, gets in; anything else is 401 (unsigned, forged, stale, replayed) or
 * 403 (a caller or identity this door does not take), whatever port it came in on. The answer says
 * no more than that; the reason is in the log (internalRefusal).
 */
export function requireIdentity(auth: InternalAuth, policy: CallerPolicy): RequestHandler {
  return (req, _res, next) => {
    markRequest(req, "verify.start");
    const result = auth.verify(req.headers, req.method, req.originalUrl);
    markRequest(req, "verify.end");
    if (!result.ok) return next(internalRefusal("authentication_required", result.reason));
    if (result.contentSha256 === UNSIGNED_PAYLOAD && !policy.streamedBody) {
      return next(internalRefusal("authentication_required", "this endpoint needs a signed body digest"));
    }
    if (!policy.from.includes(result.signer)) {
      return next(internalRefusal("insufficient_scope", `${result.signer} may not call this endpoint`));
    }
    if (!policy.kinds.includes(result.identity.kind)) {
      return next(internalRefusal("insufficient_scope", `a ${result.identity.kind} caller may not use this endpoint`));
    }
    req.identity = result.identity;
    req.caller = result.signer;
    req.signedContentSha256 = result.contentSha256;
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

/** Narrows a door to some of its callers for one route (e.g. key verification: the gateway only). */
export function onlyFrom(...callers: Deployable[]): RequestHandler {
  return (req, _res, next) => {
    if (req.caller && callers.includes(req.caller)) return next();
    next(internalRefusal("insufficient_scope", `${req.caller ?? "this caller"} may not call this endpoint`));
  };
}
