import { dayBounds, formatDay, startOfDay } from "./time";

describe("days in a time zone", () => {
  it("finds where a day starts in a zone ahead of UTC and in one behind it", () => {
    expect(startOfDay("2026-11-23", "Europe/Moscow").toISOString()).toBe("2026-11-22T21:00:00.000Z");
    expect(startOfDay("2026-11-23", "America/New_York").toISOString()).toBe("2026-11-23T05:00:00.000Z");
    expect(startOfDay("2026-11-23", "UTC").toISOString()).toBe("2026-11-23T00:00:00.000Z");
  });

  it("gives a DST day its 23 hours", () => {
    const { since, until } = dayBounds("2026-03-08", "America/New_York");
    expect(since).toBe("2026-03-08T05:00:00.000Z");
    expect(until).toBe("2026-03-09T04:00:00.000Z");
  });

  it("labels a budget day without shifting it", () => {
    expect(formatDay("2026-11-01", "en-US")).toBe("Nov 1");
  });
});
