import type { KeyIdentity } from "@meter/contracts";

/** Who a tool call runs for, and how it reaches the public API as them. */
export interface Caller {
  identity: KeyIdentity;
  /** The caller's own `Authorization` header, forwarded by the gateway: tools call the public API with it. */
  authorization: string;
  /** The origin clients reach the API on, for links in results. */
  publicBaseUrl: string;
  requestId: string;
  /** Aborted when the client goes away: waiting stops; a paid request already sent finishes regardless. */
  signal: AbortSignal;
}

export type ToolContent = { type: "text"; text: string } | { type: "resource_link"; uri: string; name: string; mimeType?: string; size?: number };

/** A tool call's result, as both protocol eras send it (2026-07-28 adds `resultType`). */
export interface ToolResult {
  [field: string]: unknown;
  content: ToolContent[];
  structuredContent: Record<string, unknown>;
  isError?: boolean;
}

/** What a tool returns on success: its structured result, a one-line summary for the model, links to files. */
export interface ToolOutcome {
  structured: Record<string, unknown>;
  summary: string;
  links?: ToolContent[];
}
