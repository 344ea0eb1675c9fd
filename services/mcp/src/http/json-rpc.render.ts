import type { Response } from "express";
import { RpcErrorCode, type RpcError, type RpcId } from "../domain/protocol";

/**
 * The HTTP status of a JSON-RPC error on the MCP endpoint (2026-07-28 streamable HTTP): an unknown
 * method is 404, a server fault 500, anything wrong with the request 400 (bad version, header mismatch,
 * missing `_meta`, malformed message). A client tells a modern server by the JSON-RPC error in the body.
 */
function statusOf(code: number): number {
  if (code === RpcErrorCode.methodNotFound) return 404;
  if (code === RpcErrorCode.internalError) return 500;
  return 400;
}

/** An error response; `id` is left out when the request's could not be read. */
export function sendRpcError(res: Response, id: RpcId | undefined, error: RpcError): void {
  res.status(statusOf(error.code)).json({ jsonrpc: "2.0", ...(id !== undefined ? { id } : {}), error });
}

export function sendRpcResult(res: Response, id: RpcId, result: Record<string, unknown>): void {
  res.status(200).json({ jsonrpc: "2.0", id, result });
}

/** The id of a single JSON-RPC message, when it has a usable one. */
export function idOf(body: unknown): RpcId | undefined {
  const id = (body as { id?: unknown } | null | undefined)?.id;
  return typeof id === "string" || typeof id === "number" ? id : undefined;
}
