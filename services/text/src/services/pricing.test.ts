import { chargeOf, costOf, estimateInputTokens } from "./pricing";

const tariff = { input_microrub_per_1k_tokens: 1_000, output_microrub_per_1k_tokens: 3_000 };

describe("pricing", () => {
  it("rounds the whole charge up once, never each part", () => {
    // 1 input token = 1 microrub, 1 output token = 3 microrub: 1.001 rounds up to 2 only once.
    expect(costOf(tariff, 1, 0)).toBe(1);
    expect(costOf(tariff, 1, 1)).toBe(4);
    expect(costOf({ input_microrub_per_1k_tokens: 1, output_microrub_per_1k_tokens: 1 }, 1, 1)).toBe(1);
  });

  it("charges what the usage costs, capped at the hold", () => {
    expect(chargeOf(tariff, 100, 10, 1_000)).toBe(130);
    expect(chargeOf(tariff, 100_000, 10_000, 1_000)).toBe(1_000);
  });

  it("caps absurd usage in BigInt instead of throwing", () => {
    expect(chargeOf(tariff, 1e300, 1e300, 5_000)).toBe(5_000);
    expect(chargeOf(tariff, Number.MAX_VALUE, 0, 7)).toBe(7);
    expect(() => costOf(tariff, 1e300, 0)).toThrow(RangeError);
  });

  it("estimates input from UTF-8 bytes, so Cyrillic costs what it can take", () => {
    expect(estimateInputTokens(undefined, [{ text: "abc" }])).toBe(8 + 3 + 4);
    expect(estimateInputTokens("sys", [{ text: "жж" }])).toBe(8 + 3 + 4 + 4 + 4);
  });
});
