import { lastDays } from "./money-report.service";

describe("lastDays", () => {
  it("counts calendar days back across a month and a leap day", () => {
    expect(lastDays("2028-03-01", 3)).toEqual(["2028-02-28", "2028-02-29", "2028-03-01"]);
    expect(lastDays("2026-11-23", 30)).toHaveLength(30);
    expect(lastDays("2026-11-23", 30)[0]).toBe("2026-10-25");
  });

  it("refuses what is not a day", () => {
    expect(() => lastDays("yesterday", 3)).toThrow(RangeError);
    expect(() => lastDays("2026-11-23", 0)).toThrow(RangeError);
  });
});
