import { decideEra } from "./protocol-era";

const meta = (version: unknown) => ({ _meta: { "io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {} } });
const rpc = (method: string, params?: unknown) => ({ jsonrpc: "2.0", id: 1, method, ...(params === undefined ? {} : { params }) });

describe("deciding the protocol era", () => {
  it("initialize and plain messages are the handshake era, whatever legacy version the header names", () => {
    expect(decideEra(rpc("initialize", { protocolVersion: "2025-06-18" }), undefined)).toEqual({ era: "legacy" });
    expect(decideEra(rpc("tools/list"), "2025-11-25")).toEqual({ era: "legacy" });
    expect(decideEra(rpc("tools/call", { name: "list_models" }), undefined)).toEqual({ era: "legacy" });
    expect(decideEra({ jsonrpc: "2.0", method: "notifications/initialized" }, "2025-03-26")).toEqual({ era: "legacy" });
  });

  it("server/discover, a 2026-07-28 _meta, or that version in the header alone are the stateless era", () => {
    expect(decideEra(rpc("server/discover"), undefined)).toEqual({ era: "modern" });
    expect(decideEra(rpc("tools/list", meta("2026-07-28")), undefined)).toEqual({ era: "modern" });
    expect(decideEra(rpc("tools/list"), "2026-07-28")).toEqual({ era: "modern" });
    expect(decideEra(rpc("tools/list", meta(20260728)), undefined)).toEqual({ era: "modern" });
  });

  it("a legacy _meta under the 2026-07-28 header goes to the stateless era, which refuses the disagreement", () => {
    expect(decideEra(rpc("tools/list", meta("2025-06-18")), "2026-07-28")).toEqual({ era: "modern" });
    expect(decideEra(rpc("tools/list", meta("2025-06-18")), "2025-06-18")).toEqual({ era: "legacy" });
  });

  it("a version neither era serves is refused, from the header or from _meta", () => {
    expect(decideEra(rpc("tools/list"), "1900-01-01")).toEqual({ era: "unsupported", requested: "1900-01-01" });
    expect(decideEra(rpc("tools/list", meta("2099-01-01")), undefined)).toEqual({ era: "unsupported", requested: "2099-01-01" });
    expect(decideEra(rpc("initialize", {}), "1900-01-01")).toEqual({ era: "unsupported", requested: "1900-01-01" });
  });

  it("a batch is the handshake era, and may not carry a stateless message", () => {
    expect(decideEra([rpc("tools/list"), rpc("tools/call", { name: "list_models" })], "2025-11-25")).toEqual({ era: "legacy" });
    expect(decideEra([rpc("tools/list"), rpc("server/discover")], undefined)).toEqual({ era: "modern_batch" });
  });
});
