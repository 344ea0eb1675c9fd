import type { RequestHandler } from "express";
import type { Identity, SessionIdentity } from "@meter/contracts";
import { AppError } from "@meter/service-kit";
import { CabinetErrors } from "../errors";

/** The signed-in person behind a cabinet request; the `/cabinet/v1` door lets only sessions in. */
export function sessionIdentityOf(req: { identity?: Identity }): SessionIdentity {
  const id = req.identity;
  if (!id || id.kind !== "session") throw new AppError("authentication_required", "a cabinet session is required");
  return id;
}

/**
 * The admin API's second caller: besides ADMIN_TOKEN (the `admin` identity), the operator's cabinet
 * session. A member's session gets no further.
 */
export const operatorOnly: RequestHandler = (req, _res, next) => {
  const id = req.identity;
  if (id?.kind === "admin" || (id?.kind === "session" && id.role === "operator")) return next();
  next(CabinetErrors.operatorOnly());
};
