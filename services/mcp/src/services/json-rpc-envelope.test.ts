import { checkLegacyEnvelope, withServedVersion } from "./json-rpc-envelope";

const msg = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/list" });

describe("the handshake era's JSON-RPC envelope", () => {
  it.each([
    ["an empty batch", [], undefined],
    ['jsonrpc "1.0"', { jsonrpc: "1.0", id: 1, method: "tools/list" }, "2025-11-25"],
    ["a string", "tools/list", undefined],
    ["a batch with a non-message", [msg(1), 7], undefined],
    ["a batch in 2025-06-18", [msg(1), msg(2)], "2025-06-18"],
    ["a batch in 2025-11-25", [msg(1)], "2025-11-25"],
    ["a batch whose requests repeat an id", [msg(1), { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_models" } }], undefined],
  ])("refuses %s with -32600", (_what, body, version) => {
    expect(checkLegacyEnvelope(body, version)).toMatchObject({ code: -32600 });
  });

  it("passes a message, and a batch from a 2025-03-26 client or one that sends no version header", () => {
    expect(checkLegacyEnvelope(msg(1), "2025-11-25")).toBeUndefined();
    expect(checkLegacyEnvelope([msg(1), msg(2)], "2025-03-26")).toBeUndefined();
    expect(checkLegacyEnvelope([msg(1), msg(2)], undefined)).toBeUndefined();
  });

  it("initialize with a version this server does not serve asks for the newest it does", () => {
    const init = (v: string) => ({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: v, capabilities: {} } });
    expect(withServedVersion(init("2024-10-07"))).toMatchObject({ params: { protocolVersion: "2025-11-25" } });
    expect(withServedVersion(init("2025-06-18"))).toEqual(init("2025-06-18"));
  });
});
