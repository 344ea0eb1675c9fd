import { BATCH_PROTOCOL_VERSIONS, LEGACY_PROTOCOL_VERSIONS, RpcErrorCode, type RpcError } from "../domain/protocol";

/**
 * What the handshake era must refuse before the SDK reads it (JSON-RPC 2.0 and the MCP revisions):
 * anything but a JSON-RPC 2.0 message object is -32600 Invalid Request (the SDK would call it a parse
 * error, or answer an empty batch with 202); a batch is -32600 unless it is non-empty and the client may
 * batch (2025-03-26, or no MCP-Protocol-Version header: a client from before headers), and its requests'
 * ids are distinct: the SDK matches answers by id, so a repeated one would send the first answer alone and
 * drop the other's (a paid call charged, its result lost), and MCP forbids reusing an id anyway.
 */
export function checkLegacyEnvelope(body: unknown, headerVersion: string | undefined): RpcError | undefined {
  if (Array.isArray(body)) {
    if (headerVersion !== undefined && !BATCH_PROTOCOL_VERSIONS.includes(headerVersion)) {
      return invalid(`JSON-RPC batches are not part of MCP ${headerVersion} (they were removed in 2025-06-18); send one message per POST`);
    }
    if (body.length === 0) return invalid("an empty batch");
    if (!body.every(isMessage)) return invalid("every entry of a batch must be a JSON-RPC 2.0 message object");
    const ids = body.filter(isRequest).map((m) => JSON.stringify(m.id));
    return new Set(ids).size === ids.length ? undefined : invalid("the requests of a batch must have distinct ids");
  }
  return isMessage(body) ? undefined : invalid('expected a JSON-RPC 2.0 message object ({"jsonrpc": "2.0", ...})');
}

/**
 * `initialize` asking for a version this server does not serve gets the newest it does, as the spec
 * has the server answer; the SDK would accept its own draft-only 2024-10-07.
 */
export function withServedVersion(body: unknown): unknown {
  const m = body as { method?: unknown; params?: { protocolVersion?: unknown } } | null;
  if (m?.method !== "initialize" || typeof m.params !== "object" || m.params === null) return body;
  const requested = m.params.protocolVersion;
  if (typeof requested !== "string" || LEGACY_PROTOCOL_VERSIONS.includes(requested)) return body;
  return { ...m, params: { ...m.params, protocolVersion: LEGACY_PROTOCOL_VERSIONS[0] } };
}

function isMessage(v: unknown): boolean {
  return typeof v === "object" && v !== null && !Array.isArray(v) && (v as { jsonrpc?: unknown }).jsonrpc === "2.0";
}

/** A request (not a notification or a response): it is answered under its id. */
function isRequest(v: unknown): v is { id: unknown } {
  const m = v as { id?: unknown; method?: unknown };
  return typeof m.method === "string" && m.id !== undefined && m.id !== null;
}

function invalid(detail: string): RpcError {
  return { code: RpcErrorCode.invalidRequest, message: `Invalid Request: ${detail}` };
}
