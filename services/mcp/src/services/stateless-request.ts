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

/** Methods whose target the client mirrors into `Mcp-Name` (2026-07-28 streamable HTTP). */
const NAMED: Record<string, string> = { "tools/call": "name", "prompts/get": "name", "resources/read": "uri" };

/**
 * Checks one JSON-RPC message of the stateless revision: its envelope (-32600), the headers it must
 * mirror from the body (`MCP-Protocol-Version` and `Mcp-Method` always, `Mcp-Name` for a named target;
 * missing or disagreeing: -32020), the `_meta` fields every request carries (-32602) and its version
 * (-32022, listing the supported ones). A notification answers nothing and needs no `_meta`; headers it
 * carries must still agree with its body.
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
  const meta = isObject(params._meta) ? params._meta : undefined;
  const metaVersion = meta?.[MetaKeys.protocolVersion];

  const headerError = checkHeaders(rid, method, params, typeof metaVersion === "string" ? metaVersion : undefined, headers, rid !== undefined);
  if (headerError) return headerError;
  if (rid === undefined) return { ok: true, request: { id: undefined, method, params, version: headers.protocolVersion ?? String(metaVersion) } };

  if (!meta)
    return fail(
      rid,
      RpcErrorCode.invalidParams,
      `Invalid params: params._meta is required, with "${MetaKeys.protocolVersion}" and "${MetaKeys.clientCapabilities}"`,
    );
  if (typeof metaVersion !== "string")
    return fail(rid, RpcErrorCode.invalidParams, `Invalid params: _meta["${MetaKeys.protocolVersion}"] is required (a protocol version string)`);
  if (!isObject(meta[MetaKeys.clientCapabilities])) {
    return fail(
      rid,
      RpcErrorCode.invalidParams,
      `Invalid params: _meta["${MetaKeys.clientCapabilities}"] is required (an object; {} when the client has none)`,
    );
  }
  if (!MODERN_PROTOCOL_VERSIONS.includes(metaVersion)) return { ok: false, id: rid, error: unsupportedVersion(metaVersion) };
  return { ok: true, request: { id: rid, method, params, version: metaVersion } };
}

/**
 * The mirrored headers: each must agree with the body, and a request must carry them all (a
 * notification only what it carries). Intermediaries route on these; a body they did not see must not run.
 */
function checkHeaders(
  id: RpcId | undefined,
  method: string,
  params: Record<string, unknown>,
  metaVersion: string | undefined,
  headers: MirroredHeaders,
  required: boolean,
): Parsed | undefined {
  if (headers.protocolVersion === undefined) {
    if (required) return mismatch(id, "the MCP-Protocol-Version header is required");
  } else if (metaVersion !== undefined && headers.protocolVersion !== metaVersion) {
    return mismatch(id, `MCP-Protocol-Version header value '${headers.protocolVersion}' does not match body value '${metaVersion}'`);
  }
  if (headers.method === undefined) {
    if (required) return mismatch(id, "the Mcp-Method header is required");
  } else if (headers.method !== method) {
    return mismatch(id, `Mcp-Method header value '${headers.method}' does not match body value '${method}'`);
  }
  const nameField = NAMED[method];
  const target = nameField !== undefined ? params[nameField] : undefined;
  if (nameField === undefined || target === undefined) {
    if (headers.name !== undefined) return mismatch(id, `Mcp-Name header '${headers.name}' names nothing the body carries`);
    return undefined;
  }
  if (headers.name === undefined) return required ? mismatch(id, `the Mcp-Name header is required for ${method}`) : undefined;
  const name = decodeHeaderValue(headers.name);
  if (name !== target) return mismatch(id, `Mcp-Name header value '${headers.name}' does not match body value '${String(target)}'`);
  return undefined;
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
