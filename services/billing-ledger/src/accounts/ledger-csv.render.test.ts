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

  it("writes one line as the page shows it, in the header's order", () => {
    const request = {
      id: 9,
      kind: "request" as const,
      status: "charged" as const,
      amount_microrub: -1_500,
      reserved_microrub: 2_000,
      key_id: "k",
      key_name: "ci, nightly",
      hold_id: "h",
      model: "meter-local-echo",
      operation: "text",
      reference: null,
      created_at: "2026-11-23T10:00:00.000Z",
      resolved_at: "2026-11-23T10:00:01.000Z",
    };
    expect(ledgerCsvLine(request)).toBe(
      '9,2026-11-23T10:00:00.000Z,2026-11-23T10:00:01.000Z,request,charged,text · meter-local-echo,text,meter-local-echo,k,"ci, nightly",-1500,-0.001500,2000,h,',
    );
    // An allowance is named in words, not by its internal reference.
    const allowance = ledgerCsvLine({ ...request, kind: "allowance", status: "reserved", model: null, reference: "allowance", resolved_at: null });
    expect(allowance).toContain(',allowance,reserved,"set aside for this key\'s next requests, returned within seconds",');
    expect(allowance.endsWith(",h,")).toBe(true);
  });
});
