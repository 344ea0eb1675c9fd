import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";

/**
 * The two eras of MCP this endpoint serves (docs/mcp.md). Legacy revisions open with `initialize` and
 * are served by the SDK; the 2026-07-28 revision is stateless (every request carries its version and
 * the client's capabilities in `_meta`) and is served by this service's own dispatcher, since the SDK
 * does not speak it yet.
 */
export const MODERN_PROTOCOL_VERSIONS: readonly string[] = ["2026-07-28"];
/** The SDK's versions less 2024-10-07, a draft name no published revision carries. */
export const LEGACY_PROTOCOL_VERSIONS: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS.filter((v) => v !== "2024-10-07");
/** The only revision with JSON-RPC batches: added in 2025-03-26, removed in 2025-06-18. */
export const BATCH_PROTOCOL_VERSIONS: readonly string[] = ["2025-03-26"];
/** Newest first, as `server/discover` and every version error list them. */
export const SUPPORTED_VERSIONS: readonly string[] = [...MODERN_PROTOCOL_VERSIONS, ...LEGACY_PROTOCOL_VERSIONS];

export const ProtocolVersionHeader = "mcp-protocol-version";
/** 2026-07-28 mirrors the method and the tool name into headers for intermediaries; they must agree with the body. */
export const McpMethodHeader = "mcp-method";
export const McpNameHeader = "mcp-name";

export const MetaKeys = {
  protocolVersion: "io.modelcontextprotocol/protocolVersion",
  clientCapabilities: "io.modelcontextprotocol/clientCapabilities",
  clientInfo: "io.modelcontextprotocol/clientInfo",
  serverInfo: "io.modelcontextprotocol/serverInfo",
} as const;

/** JSON-RPC 2.0 codes, and those 2026-07-28 reserves for MCP (-32020 to -32099). */
export const RpcErrorCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  headerMismatch: -32020,
  unsupportedProtocolVersion: -32022,
} as const;

export const SERVER_INFO = { name: "meter", title: "Meter metered AI API", version: "1.0.0" } as const;

/** What `initialize` and `server/discover` tell the model about using these tools well. */
export const SERVER_INSTRUCTIONS = [
  "Tools of a metered AI API; amounts are integer microrubles.",
  "Quote first (quote_text, quote_media) and pass the estimate as max_cost_microrub to cap a paid call.",
  'Paid tools (create_message, create_response, edit_image, analyze_image, ocr, analyze_text) take an idempotency_key: repeat a call with the same key and arguments to get its result again without paying twice; a result with status "pending" means exactly that.',
  "Job tools wait a short while, then return the job: poll it with get_job. Result files are links, downloadable with the same API key.",
  "At most 2 tool calls run at once per organization; a call refused with mcp_busy may be retried once another has finished.",
].join(" ");

/** A JSON-RPC error object. */
export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

export type RpcId = string | number;
