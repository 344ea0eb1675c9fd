import { MCP_TOOL_SCOPES, McpToolName, type Scope } from "@meter/contracts";

/** The scope groups `scopes` satisfies none of for `tool` (each group: any one of its scopes); empty when the key may use it. */
export function missingScopes(scopes: readonly Scope[], tool: McpToolName): (readonly Scope[])[] {
  return MCP_TOOL_SCOPES[tool].filter((group) => !group.some((s) => scopes.includes(s)));
}

/** The tools a key may use, in the catalog's fixed order (2026-07-28 asks for a deterministic order). */
export function toolsFor(scopes: readonly Scope[]): McpToolName[] {
  return McpToolName.options.filter((tool) => missingScopes(scopes, tool).length === 0);
}
