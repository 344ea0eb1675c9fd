import type { Request, Response } from "express";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { SERVER_INFO, SERVER_INSTRUCTIONS } from "../domain/protocol";
import type { Caller } from "../domain/tool-call";
import type { ToolCatalog } from "../services/tool-catalog";
import type { ToolInvoker } from "../services/tool-invoker.service";

/**
 * The handshake era (MCP 2024-11-05 to 2025-11-25) through the SDK, in its stateless pattern: a fresh
 * server and transport for this one POST, holding only the tools this key may use, closed when the
 * response closes and never reused. JSON responses, no session id, no SSE stream to resume.
 */
export async function serveHandshakeEra(req: Request, res: Response, deps: { catalog: ToolCatalog; invoker: ToolInvoker }, caller: Caller): Promise<void> {
  const server = new McpServer(SERVER_INFO, { instructions: SERVER_INSTRUCTIONS, capabilities: { tools: {} } });
  const tools = deps.catalog.visibleTo(caller.identity.scopes);
  for (const tool of tools) {
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: tool.input, outputSchema: tool.output, annotations: tool.annotations },
      (args) => deps.invoker.invoke(tool.name, args, caller),
    );
  }
  if (tools.length === 0) {
    // McpServer answers tools/list only once a tool is registered; a key that may use none gets an empty list.
    server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [] }));
  }
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on("close", () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
}
