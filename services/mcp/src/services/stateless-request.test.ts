import { parseStatelessRequest } from "./stateless-request";

const META = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} };
const none = { protocolVersion: undefined, method: undefined, name: undefined };

describe("a 2026-07-28 request", () => {
  it("passes with its _meta, with or without mirrored headers", () => {
    const body = { jsonrpc: "2.0", id: "a", method: "tools/call", params: { name: "ocr", _meta: META } };
    expect(parseStatelessRequest(body, none)).toMatchObject({ ok: true, request: { id: "a", method: "tools/call", version: "2026-07-28" } });
    expect(parseStatelessRequest(body, { protocolVersion: "2026-07-28", method: "tools/call", name: "ocr" }).ok).toBe(true);
  });

  it("a notification has no id", () => {
    expect(parseStatelessRequest({ jsonrpc: "2.0", method: "notifications/cancelled", params: { _meta: META } }, none)).toMatchObject({
      ok: true,
      request: { id: undefined },
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
      -32022,
    ],
  ])("refuses %s", (_what, body, code) => {
    expect(parseStatelessRequest(body, none)).toMatchObject({ ok: false, error: { code } });
  });

  it("refuses headers that disagree with the body, a base64-encoded name decoded first", () => {
    const body = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_file", _meta: META } };
    expect(parseStatelessRequest(body, { ...none, method: "tools/list" })).toMatchObject({ ok: false, id: 1, error: { code: -32020 } });
    expect(parseStatelessRequest(body, { ...none, name: `=?base64?${Buffer.from("get_file").toString("base64")}?=` }).ok).toBe(true);
    expect(parseStatelessRequest(body, { ...none, name: `=?base64?${Buffer.from("get_job").toString("base64")}?=` })).toMatchObject({
      ok: false,
      error: { code: -32020 },
    });
  });
});
