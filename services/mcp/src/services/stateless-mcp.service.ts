import { MetaKeys, RpcErrorCode, SERVER_INFO, SERVER_INSTRUCTIONS, SUPPORTED_VERSIONS, type RpcError } from "../domain/protocol";
import type { Caller, ToolResult } from "../domain/tool-call";
import type { StatelessRequest } from "./stateless-request";
import type { ToolCatalog } from "./tool-catalog";
import type { ToolInvoker } from "./tool-invoker.service";
import { toolListing } from "./tool-listing";

export type StatelessOutcome = { result: Record<string, unknown> } | { error: RpcError };

/** How long a client may keep the tool list or the discovery answer before asking again. */
const LIST_TTL_MS = 5 * 60_000;
const DISCOVERY_TTL_MS = 60 * 60_000;

/**
 * The methods of MCP 2026-07-28 this server offers: `server/discover`, `tools/list` and `tools/call`.
 * Each request stands alone (its version and capabilities came in its `_meta`); every result carries
 * `resultType` and the server's identity. Tools and their calls are the same as in the handshake era.
 */
export class StatelessMcp {
  constructor(private readonly deps: { catalog: ToolCatalog; invoker: ToolInvoker }) {}

  async handle(request: StatelessRequest, caller: Caller): Promise<StatelessOutcome> {
    switch (request.method) {
      case "server/discover":
        return complete({
          supportedVersions: [...SUPPORTED_VERSIONS],
          capabilities: { tools: {} },
          instructions: SERVER_INSTRUCTIONS,
          ttlMs: DISCOVERY_TTL_MS,
          cacheScope: "public",
        });
      case "tools/list":
        // The list depends on the key's scopes: shared caches must not serve it to another key.
        return complete({
          tools: this.deps.catalog.visibleTo(caller.identity.scopes).map((t) => toolListing(t, "draft-2020-12")),
          ttlMs: LIST_TTL_MS,
          cacheScope: "private",
        });
      case "tools/call":
        return this.call(request, caller);
      default:
        return {
          error: {
            code: RpcErrorCode.methodNotFound,
            message: `Method not found: ${request.method} (this server offers server/discover, tools/list and tools/call)`,
          },
        };
    }
  }

  private async call(request: StatelessRequest, caller: Caller): Promise<StatelessOutcome> {
    const { name, arguments: args } = request.params;
    if (typeof name !== "string") return { error: { code: RpcErrorCode.invalidParams, message: "Invalid params: name (the tool's name) is required" } };
    if (args !== undefined && (typeof args !== "object" || args === null || Array.isArray(args))) {
      return { error: { code: RpcErrorCode.invalidParams, message: "Invalid params: arguments must be an object" } };
    }
    const tool = this.deps.catalog.get(name);
    if (!tool) return { error: { code: RpcErrorCode.invalidParams, message: `Unknown tool: ${name} (tools/list shows the tools)` } };
    // A tool the key may not use is known: the invoker refuses it with insufficient_scope, naming the scope.
    const frame = (r: ToolResult) => ({ jsonrpc: "2.0", id: request.id, result: completed(r) });
    return { result: completed(await this.deps.invoker.invoke(tool, args ?? {}, caller, frame)) };
  }
}

function completed(result: Record<string, unknown>): Record<string, unknown> {
  return { resultType: "complete", ...result, _meta: { [MetaKeys.serverInfo]: SERVER_INFO } };
}

function complete(result: Record<string, unknown>): StatelessOutcome {
  return { result: completed(result) };
}
