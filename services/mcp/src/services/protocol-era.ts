import { LEGACY_PROTOCOL_VERSIONS, MetaKeys, MODERN_PROTOCOL_VERSIONS, SUPPORTED_VERSIONS } from "../domain/protocol";

/**
 * Which era of MCP a POST speaks, decided before the SDK sees it:
 * - `initialize`, and any message without 2026-07-28 markers, is the handshake era (the SDK);
 * - `server/discover`, a `_meta` protocol version of 2026-07-28, or that version in the
 *   MCP-Protocol-Version header alone, is the stateless era;
 * - a version (header or `_meta`) that neither era serves is refused, listing the supported ones.
 */
export type EraDecision =
  | { era: "legacy" }
  | { era: "modern" }
  | { era: "unsupported"; requested: string }
  /** 2026-07-28 sends one message per POST; a batch holding one of its messages is malformed. */
  | { era: "modern_batch" };

export function decideEra(body: unknown, headerVersion: string | undefined): EraDecision {
  if (headerVersion !== undefined && !SUPPORTED_VERSIONS.includes(headerVersion)) return { era: "unsupported", requested: headerVersion };
  if (Array.isArray(body)) {
    for (const entry of body) {
      const decision = decideMessage(entry, headerVersion);
      if (decision.era === "unsupported") return decision;
      if (decision.era === "modern") return { era: "modern_batch" };
    }
    return { era: "legacy" };
  }
  return decideMessage(body, headerVersion);
}

function decideMessage(message: unknown, headerVersion: string | undefined): EraDecision {
  const m = (typeof message === "object" && message !== null ? message : {}) as { method?: unknown; params?: { _meta?: Record<string, unknown> } };
  if (m.method === "initialize") return { era: "legacy" };
  const meta = typeof m.params === "object" && m.params !== null ? m.params._meta : undefined;
  const version = typeof meta === "object" && meta !== null ? meta[MetaKeys.protocolVersion] : undefined;
  if (typeof version === "string") {
    if (MODERN_PROTOCOL_VERSIONS.includes(version)) return { era: "modern" };
    // A handshake-era client may carry any _meta; its version decides nothing more. Under the
    // 2026-07-28 header, though, it disagrees with that header: the stateless era refuses it (-32020).
    if (LEGACY_PROTOCOL_VERSIONS.includes(version))
      return headerVersion !== undefined && MODERN_PROTOCOL_VERSIONS.includes(headerVersion) ? { era: "modern" } : { era: "legacy" };
    return { era: "unsupported", requested: version };
  }
  // Present but not a string: a malformed stateless request, refused there with -32602.
  if (version !== undefined) return { era: "modern" };
  if (m.method === "server/discover") return { era: "modern" };
  if (headerVersion !== undefined && MODERN_PROTOCOL_VERSIONS.includes(headerVersion)) return { era: "modern" };
  return { era: "legacy" };
}
