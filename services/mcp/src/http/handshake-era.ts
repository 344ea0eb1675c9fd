import type { Request, Response } from "express";
import type { Logger } from "@meter/service-kit";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { SERVER_INFO, SERVER_INSTRUCTIONS } from "../domain/protocol";
import type { Caller, ToolResult } from "../domain/tool-call";
import type { ToolCatalog } from "../services/tool-catalog";
import type { ToolInvoker } from "../services/tool-invoker.service";
import { toolListing } from "../services/tool-listing";

export interface HandshakeEraDeps {
  catalog: ToolCatalog;
  invoker: ToolInvoker;
  logger: Logger;
}

/**
 * The handshake era (MCP 2024-11-05 to 2025-11-25) through the SDK's low-level server, in its stateless
 * pattern: a fresh server and transport for this one POST, closed when the response closes. JSON
 * responses, no session id, no SSE stream, and no `listChanged` (there is no channel to send it on).
 * tools/list shows the key's tools; tools/call of a name that is no tool is -32602, as the spec says.
 */
export async function serveHandshakeEra(req: Request, res: Response, deps: HandshakeEraDeps, caller: Caller): Promise<void> {
  const server = new Server(SERVER_INFO, { instructions: SERVER_INSTRUCTIONS, capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: deps.catalog.visibleTo(caller.identity.scopes).map((t) => toolListing(t, "draft-7")),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = deps.catalog.get(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name} (tools/list shows the tools)`);
    const id = extra.requestId;
    const result = await deps.invoker.invoke(tool, request.params.arguments ?? {}, caller, (r: ToolResult) => ({ result: r, jsonrpc: "2.0", id }));
    return result;
  });

  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  const send = transport.send.bind(transport);
  transport.send = (message, options) => send(withoutInternalDetail(message, caller.requestId, deps.logger), options);
  res.on("close", () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
}

/**
 * An internal error's message is the SDK's own exception text (a zod dump of a request it could not
 * read, a stack's first line): it goes to the log, and the client gets a generic message with the
 * request id to quote.
 */
function withoutInternalDetail(message: JSONRPCMessage, requestId: string, logger: Logger): JSONRPCMessage {
  if (!("error" in message) || message.error.code !== ErrorCode.InternalError) return message;
  logger.warn({ requestId, rpcId: message.id, detail: message.error.message }, "an MCP request ended in an internal error");
  return {
    jsonrpc: "2.0",
    id: message.id,
    error: { code: ErrorCode.InternalError, message: `Internal error (request id ${requestId})`, data: { request_id: requestId } },
  };
}
