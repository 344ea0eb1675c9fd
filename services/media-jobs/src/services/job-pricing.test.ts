import { billableQuantity, chargeOf, costOf } from "./job-pricing";

describe("billableQuantity", () => {
  it("takes the engine's count when the tariff is in the engine's unit", () => {
    expect(billableQuantity("page", { unit: "page", quantity: 7 }, 2)).toBe(7);
    expect(billableQuantity("character", { unit: "character", quantity: 12_345 }, 1)).toBe(12_345);
  });

  it("counts one request per job and one file or document per input, whatever the engine measured", () => {
    expect(billableQuantity("request", { unit: "page", quantity: 7 }, 2)).toBe(1);
    expect(billableQuantity("file", { unit: "page", quantity: 7 }, 2)).toBe(2);
    expect(billableQuantity("document", { unit: "image", quantity: 3 }, 3)).toBe(3);
  });

  it("cannot count a unit the engine does not measure: the cost is unknown", () => {
    expect(billableQuantity("page", { unit: "image", quantity: 3 }, 3)).toBeUndefined();
    expect(billableQuantity("minute", { unit: "character", quantity: 10 }, 1)).toBeUndefined();
  });
});

describe("costOf", () => {
  it("is price x quantity exactly", () => {
    expect(costOf(3_000, 2)).toBe(6_000);
    expect(costOf(0, 1_000)).toBe(0);
  });

  it("is unknown beyond the largest amount instead of losing precision", () => {
    expect(costOf(Number.MAX_SAFE_INTEGER, 2)).toBeUndefined();
    expect(costOf(Number.MAX_SAFE_INTEGER, 1)).toBe(Number.MAX_SAFE_INTEGER);
  });
});

describe("chargeOf", () => {
  it("charges what ran, capped at the hold", () => {
    expect(chargeOf(1_000, 2, 5_000)).toBe(2_000);
    expect(chargeOf(1_000, 9, 5_000)).toBe(5_000);
    expect(chargeOf(Number.MAX_SAFE_INTEGER, 1_000, 7)).toBe(7);
  });
});
