import { exactRubleDigits, formatPrice, formatRubles, parseRubles } from "./money";

describe("rubles from microrubles", () => {
  it("shows kopecks, rounding half up, and keeps a charge below half a kopeck visible", () => {
    expect(formatRubles(1_234_567, "en-US")).toBe("₽1.23");
    expect(formatRubles(1_235_000, "en-US")).toBe("₽1.24");
    expect(formatRubles(50_000_000, "en-US")).toBe("₽50.00");
    expect(formatRubles(0, "en-US")).toBe("₽0.00");
    expect(formatRubles(4, "en-US")).toBe("<₽0.01");
    expect(formatRubles(406_800, "en-US")).toBe("₽0.41");
    expect(formatRubles(5_000, "en-US")).toBe("₽0.01");
    expect(formatRubles(120_000, "en-US")).toBe("₽0.12");
    // Russian groups with no-break spaces; compared as plain ones.
    expect(formatRubles(1_234_567_890_000, "ru-RU").replace(/\s/g, " ")).toBe("1 234 567,89 ₽");
  });

  it("shows a tariff with every digit it has", () => {
    expect(formatPrice(43, "en-US")).toBe("₽0.000043");
    expect(formatPrice(450_000, "en-US")).toBe("₽0.45");
  });

  it("is exact on hover, to the microruble, past a float's precision", () => {
    expect(exactRubleDigits(Number.MAX_SAFE_INTEGER)).toBe("9007199254.740991");
    expect(exactRubleDigits(7)).toBe("0.000007");
  });

  it("reads what a person types, exactly, and refuses what is not an amount", () => {
    expect(parseRubles("12")).toBe(12_000_000);
    expect(parseRubles("12,5")).toBe(12_500_000);
    expect(parseRubles(" 1 234.000001 ₽")).toBe(1_234_000_001);
    expect(parseRubles("0.1")).toBe(100_000);
    expect(parseRubles("1.0000001")).toBeUndefined();
    expect(parseRubles("-1")).toBeUndefined();
    expect(parseRubles("1e3")).toBeUndefined();
    expect(parseRubles("")).toBeUndefined();
    expect(parseRubles("9007199255")).toBeUndefined();
  });
});
