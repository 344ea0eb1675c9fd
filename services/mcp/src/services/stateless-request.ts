import { MetaKeys, MODERN_PROTOCOL_VERSIONS, RpcErrorCode, SUPPORTED_VERSIONS, type RpcError, type RpcId } from "../domain/protocol";

/** A 2026-07-28 request that passed the revision's checks. */
export interface StatelessRequest {
  /** Absent for a notification. */
  id: RpcId | undefined;
  method: string;
  params: Record<string, unknown>;
  version: string;
}

/** The HTTP headers 2026-07-28 mirrors from the body, as received (undefined when absent). */
export interface MirroredHeaders {
  protocolVersion: string | undefined;
  method: string | undefined;
  name: string | undefined;
}

export type Parsed = { ok: true; request: StatelessRequest } | { ok: false; id: RpcId | undefined; error: RpcError };

const SENTINEL = /^=\?base64\?(.*)\?=$/;

/**
 * Checks one JSON-RPC message of the stateless revision: its envelope (-32600), the `_meta` fields every
 * request must carry (-32602), its version (-32022, listing the supported ones) and, where the client
 * mirrored body values into headers, that they agree with the body (-32020). Headers a client left out
 * are not demanded: the body is what is executed, and checking what is present keeps intermediaries
 * that route on headers honest.
 */
export function parseStatelessRequest(body: unknown, headers: MirroredHeaders): Parsed {
  if (!isObject(body) || body.jsonrpc !== "2.0" || typeof body.method !== "string") {
    return fail(undefined, RpcErrorCode.invalidRequest, "Invalid Request: expected one JSON-RPC 2.0 request object with a method");
  }
  const hasId = Object.hasOwn(body, "id");
  const id = body.id;
  if (hasId && typeof id !== "string" && typeof id !== "number")
    return fail(undefined, RpcErrorCode.invalidRequest, "Invalid Request: id must be a string or a number");
  const rid = hasId ? (id as RpcId) : undefined;
  const method = body.method;

  if (body.params !== undefined && !isObject(body.params)) return fail(rid, RpcErrorCode.invalidParams, "Invalid params: params must be an object");
  const params = (body.params ?? {}) as Record<string, unknown>;
  const meta = params._meta;
  if (!isObject(meta))
    return fail(
      rid,
      RpcErrorCode.invalidParams,
      `Invalid params: params._meta is required, with "${MetaKeys.protocolVersion}" and "${MetaKeys.clientCapabilities}"`,
    );
  const version = meta[MetaKeys.protocolVersion];
  if (typeof version !== "string")
    return fail(rid, RpcErrorCode.invalidParams, `Invalid params: _meta["${MetaKeys.protocolVersion}"] is required (a protocol version string)`);
  if (!isObject(meta[MetaKeys.clientCapabilities])) {
    return fail(
      rid,
      RpcErrorCode.invalidParams,
      `Invalid params: _meta["${MetaKeys.clientCapabilities}"] is required (an object; {} when the client has none)`,
    );
  }
  if (!MODERN_PROTOCOL_VERSIONS.includes(version)) return { ok: false, id: rid, error: unsupportedVersion(version) };

  if (headers.protocolVersion !== undefined && headers.protocolVersion !== version) {
    return mismatch(rid, `MCP-Protocol-Version header value '${headers.protocolVersion}' does not match body value '${version}'`);
  }
  if (headers.method !== undefined && headers.method !== method)
    return mismatch(rid, `Mcp-Method header value '${headers.method}' does not match body value '${method}'`);
  if (headers.name !== undefined && method === "tools/call") {
    const name = decodeHeaderValue(headers.name);
    if (name !== params.name) return mismatch(rid, `Mcp-Name header value '${headers.name}' does not match body value '${String(params.name)}'`);
  }
  return { ok: true, request: { id: rid, method, params, version } };
}

/** The error for a version this endpoint does not serve (-32022), in the revision's shape. */
export function unsupportedVersion(requested: string): RpcError {
  return {
    code: RpcErrorCode.unsupportedProtocolVersion,
    message: `Unsupported protocol version: ${requested} (supported versions: ${SUPPORTED_VERSIONS.join(", ")})`,
    data: { supported: [...SUPPORTED_VERSIONS], requested },
  };
}

/** `=?base64?...?=` carries a value that is not a plain ASCII header value. */
function decodeHeaderValue(value: string): string {
  const m = SENTINEL.exec(value);
  return m ? Buffer.from(m[1]!, "base64").toString("utf8") : value;
}

function mismatch(id: RpcId | undefined, detail: string): Parsed {
  return fail(id, RpcErrorCode.headerMismatch, `Header mismatch: ${detail}`);
}

function fail(id: RpcId | undefined, code: number, message: string): Parsed {
  return { ok: false, id, error: { code, message } };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
