import { parseStatelessRequest } from "./stateless-request";

const META = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} };
const none = { protocolVersion: undefined, method: undefined, name: undefined };
const headersOf = (method: string, name?: string) => ({ protocolVersion: "2026-07-28", method, name });

describe("a 2026-07-28 request", () => {
  it("passes with its _meta and the headers mirrored from it", () => {
    const body = { jsonrpc: "2.0", id: "a", method: "tools/call", params: { name: "ocr", _meta: META } };
    expect(parseStatelessRequest(body, headersOf("tools/call", "ocr"))).toMatchObject({
      ok: true,
      request: { id: "a", method: "tools/call", version: "2026-07-28" },
    });
    expect(parseStatelessRequest({ jsonrpc: "2.0", id: 2, method: "tools/list", params: { _meta: META } }, headersOf("tools/list")).ok).toBe(true);
  });

  it.each([
    ["no MCP-Protocol-Version", { ...headersOf("tools/call", "ocr"), protocolVersion: undefined }, /MCP-Protocol-Version header is required/],
    ["no Mcp-Method", { ...headersOf("tools/call", "ocr"), method: undefined }, /Mcp-Method header is required/],
    ["no Mcp-Name on tools/call", headersOf("tools/call"), /Mcp-Name header is required/],
    ["none of them", none, /MCP-Protocol-Version header is required/],
  ])("refuses a request with %s: -32020", (_what, headers, message) => {
    const body = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "ocr", _meta: META } };
    const parsed = parseStatelessRequest(body, headers);
    expect(parsed).toMatchObject({ ok: false, id: 1, error: { code: -32020 } });
    expect(!parsed.ok && parsed.error.message).toMatch(message);
  });

  it("a notification has no id and needs no _meta; headers it carries must agree", () => {
    expect(parseStatelessRequest({ jsonrpc: "2.0", method: "notifications/cancelled", params: { _meta: META } }, none)).toMatchObject({
      ok: true,
      request: { id: undefined },
    });
    expect(parseStatelessRequest({ jsonrpc: "2.0", method: "notifications/initialized" }, { ...none, protocolVersion: "2026-07-28" }).ok).toBe(true);
    expect(parseStatelessRequest({ jsonrpc: "2.0", method: "notifications/initialized" }, { ...none, method: "tools/list" })).toMatchObject({
      ok: false,
      error: { code: -32020 },
    });
  });

  it.each([
    ["not JSON-RPC 2.0", { jsonrpc: "1.0", id: 1, method: "tools/list", params: { _meta: META } }, -32600],
    ["a null id", { jsonrpc: "2.0", id: null, method: "tools/list", params: { _meta: META } }, -32600],
    ["params that are an array", { jsonrpc: "2.0", id: 1, method: "tools/list", params: [] }, -32602],
    [
      "capabilities that are not an object",
      { jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: { ...META, "io.modelcontextprotocol/clientCapabilities": [] } } },
      -32602,
    ],
    [
      "an unknown version",
      { jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: { ...META, "io.modelcontextprotocol/protocolVersion": "2027-01-01" } } },
      -32020,
    ],
  ])("refuses %s", (_what, body, code) => {
    expect(parseStatelessRequest(body, headersOf("tools/list"))).toMatchObject({ ok: false, error: { code } });
  });

  it("refuses headers that disagree with the body, a base64-encoded name decoded first", () => {
    const body = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_file", _meta: META } };
    expect(parseStatelessRequest(body, headersOf("tools/list", "get_file"))).toMatchObject({ ok: false, id: 1, error: { code: -32020 } });
    expect(parseStatelessRequest(body, headersOf("tools/call", `=?base64?${Buffer.from("get_file").toString("base64")}?=`)).ok).toBe(true);
    expect(parseStatelessRequest(body, headersOf("tools/call", `=?base64?${Buffer.from("get_job").toString("base64")}?=`))).toMatchObject({
      ok: false,
      error: { code: -32020 },
    });
  });
});
