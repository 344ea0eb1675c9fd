import { ledgerCsvLine, rubles, text } from "./ledger-csv.render";

describe("ledger CSV", () => {
  it("writes amounts exactly, in microrubles and in rubles", () => {
    expect(rubles(0)).toBe("0.000000");
    expect(rubles(1)).toBe("0.000001");
    expect(rubles(1_234_567)).toBe("1.234567");
    expect(rubles(Number.MAX_SAFE_INTEGER)).toBe("9007199254.740991");
  });

  it("quotes what needs quoting and defuses formulas", () => {
    expect(text(null)).toBe("");
    expect(text("invoice 7")).toBe("invoice 7");
    expect(text('say "hi", then go')).toBe('"say ""hi"", then go"');
    expect(text('=HYPERLINK("x")')).toBe('"\'=HYPERLINK(""x"")"');
    expect(text("-1")).toBe(`"'-1"`);
  });

  it("writes one line per entry in the header's order", () => {
    const line = ledgerCsvLine({
      id: 9,
      kind: "settle",
      amount_microrub: 1_500,
      balance_after_microrub: 98_500,
      reserved_after_microrub: 0,
      key_id: "k",
      key_name: "ci, nightly",
      hold_id: "h",
      model: "meter-local-echo",
      operation: "text",
      reference: null,
      created_at: "2026-11-23T10:00:00.000Z",
    });
    expect(line).toBe('9,2026-11-23T10:00:00.000Z,settle,1500,0.001500,98500,0,meter-local-echo,text,k,"ci, nightly",h,');
  });
});
