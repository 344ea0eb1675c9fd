import { parseClamdVersion } from "./clamd-signatures";

describe("what clamd's VERSION says it scans with", () => {
  it("names the official daily database and its build time when they are loaded", () => {
    expect(parseClamdVersion("ClamAV 1.4.6/27455/Sat Nov 14 07:39:00 2026\n")).toEqual({
      official: true,
      engine: "ClamAV 1.4.6",
      daily: "27455",
      builtAt: "Sat Nov 14 07:39:00 2026",
    });
  });

  it("knows the engine alone means no official database (the project's test signatures)", () => {
    expect(parseClamdVersion("ClamAV 1.4.6")).toEqual({ official: false, engine: "ClamAV 1.4.6" });
  });

  it("refuses an answer that is not clamd's", () => {
    expect(() => parseClamdVersion("UNKNOWN COMMAND")).toThrow(/answered VERSION with "UNKNOWN COMMAND"/);
  });
});
