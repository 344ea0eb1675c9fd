import type { Request, Response } from "express";
import { AppError, keyIdentityOf } from "@meter/service-kit";
import type { Caller } from "../domain/tool-call";

/**
 * The key holder of this request and their own credential, which the gateway forwards to MCP (and to
 * no other service) so the tools call the public API as them. The signal fires if the client leaves first.
 */
export function callerOf(req: Request, res: Response, publicBaseUrl: string): Caller {
  const authorization = req.headers.authorization;
  if (!authorization) throw new AppError("authentication_required", "the caller's Authorization header did not reach the MCP service");
  const gone = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) gone.abort();
  });
  return { identity: keyIdentityOf(req), authorization, publicBaseUrl, requestId: req.requestId, signal: gone.signal };
}
