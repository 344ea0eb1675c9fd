import { spendSeries } from "./spend-series";

it("stacks spend by model and operation, aligned to every day of the window", () => {
  const { series, total } = spendSeries({
    object: "spend_report",
    organization_id: "o",
    timezone: "UTC",
    days: ["2026-11-21", "2026-11-22", "2026-11-23"],
    by_key: [],
    months: [],
    data: [
      { day: "2026-11-21", model: "echo", operation: "text", amount_microrub: 5, requests: 1 },
      { day: "2026-11-23", model: "echo", operation: "text", amount_microrub: 7, requests: 2 },
      { day: "2026-11-23", model: "ocr", operation: "ocr", amount_microrub: 100, requests: 1 },
    ],
  });
  expect(total).toBe(112);
  expect(series.map((s) => [s.label, s.perDay, s.total])).toEqual([
    ["ocr · ocr", [0, 0, 100], 100],
    ["echo · text", [5, 0, 7], 12],
  ]);
});
