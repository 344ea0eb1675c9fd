import type { Request, Response } from "express";
import { McpMethodHeader, McpNameHeader, ProtocolVersionHeader } from "../domain/protocol";
import type { Caller } from "../domain/tool-call";
import type { StatelessMcp } from "../services/stateless-mcp.service";
import { parseStatelessRequest } from "../services/stateless-request";
import { sendRpcError, sendRpcResult } from "./json-rpc.render";

/** The stateless era (MCP 2026-07-28): one request per POST, answered as one JSON object. */
export async function serveStatelessEra(req: Request, res: Response, deps: { stateless: StatelessMcp }, caller: Caller): Promise<void> {
  const parsed = parseStatelessRequest(req.body, {
    protocolVersion: header(req, ProtocolVersionHeader),
    method: header(req, McpMethodHeader),
    name: header(req, McpNameHeader),
  });
  if (!parsed.ok) return sendRpcError(res, parsed.id, parsed.error);
  const { request } = parsed;
  // The revision defines no client notification over HTTP; one that arrives is accepted and has no effect.
  if (request.id === undefined) {
    res.status(202).end();
    return;
  }
  const outcome = await deps.stateless.handle(request, caller);
  if ("error" in outcome) sendRpcError(res, request.id, outcome.error);
  else sendRpcResult(res, request.id, outcome.result);
}

function header(req: Request, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
