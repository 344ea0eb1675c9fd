import { changeEffect } from "./tariff-change";

const activity = [
  { model: "m", operation: "text", settled_requests: 10, settled_microrub: 1_000_001, active_holds: 2, reserved_microrub: 500 },
  { model: "m", operation: "ocr", settled_requests: 3, settled_microrub: 300, active_holds: 0, reserved_microrub: 0 },
];

it("shows each price before and after, sample costs, and the recent traffic repriced (rounded up)", () => {
  const effect = changeEffect(
    {
      enabled: true,
      operations: { text: { input_microrub_per_1k_tokens: 1_000, output_microrub_per_1k_tokens: 3_000 }, ocr: { unit: "page", price_per_unit_microrub: 100 } },
    },
    {
      enabled: true,
      operations: { text: { input_microrub_per_1k_tokens: 2_000, output_microrub_per_1k_tokens: 3_000 }, ocr: { unit: "page", price_per_unit_microrub: 150 } },
    },
    activity,
  );
  expect(effect.availability).toBe("unchanged");
  expect(effect.prices).toEqual([
    { operation: "text", price: "input", before: 1_000, after: 2_000 },
    { operation: "text", price: "output", before: 3_000, after: 3_000 },
    { operation: "ocr", price: "unit", unit: "page", before: 100, after: 150 },
  ]);
  const [text, ocr] = effect.operations;
  expect(text).toMatchObject({ sampleUnit: undefined, sampleBefore: 4_000, sampleAfter: 5_000, projected: { low: 1_000_001, high: 2_000_002 } });
  expect(ocr).toMatchObject({ sampleUnit: "page", sampleBefore: 100, sampleAfter: 150, projected: { low: 450, high: 450 } });
});

it("says when a model is switched off, and cannot reprice from a free tariff", () => {
  const effect = changeEffect(
    { enabled: true, operations: { ocr: { unit: "page", price_per_unit_microrub: 0 } } },
    { enabled: false, operations: { ocr: { unit: "page", price_per_unit_microrub: 10 } } },
    activity,
  );
  expect(effect.availability).toBe("disabled");
  expect(effect.operations[0]!.projected).toBeUndefined();
});

it("a price moved to another unit is the old price gone and a new one, and the traffic is not repriced", () => {
  const effect = changeEffect(
    { enabled: true, operations: { ocr: { unit: "page", price_per_unit_microrub: 100 } } },
    { enabled: true, operations: { ocr: { unit: "file", price_per_unit_microrub: 300 } } },
    activity,
  );
  expect(effect.prices).toEqual([
    { operation: "ocr", price: "unit", unit: "page", before: 100, after: undefined },
    { operation: "ocr", price: "unit", unit: "file", before: undefined, after: 300 },
  ]);
  expect(effect.operations[0]!.projected).toBeUndefined();
});
