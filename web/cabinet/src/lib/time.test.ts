import { dayBounds, formatDay, formatLocalDay, localDayPattern, parseLocalDay, startOfDay } from "./time";

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

describe("days as the browser's language writes them", () => {
  it("formats and asks for a day in the locale's order", () => {
    expect([formatLocalDay("2026-11-23", "en-US"), localDayPattern("en-US")]).toEqual(["11/23/2026", "mm/dd/yyyy"]);
    expect([formatLocalDay("2026-11-23", "ru-RU"), localDayPattern("ru-RU")]).toEqual(["23.11.2026", "dd.mm.yyyy"]);
    expect(localDayPattern("en-GB")).toBe("dd/mm/yyyy");
  });

  it("reads a typed day in the locale's order, or as year-month-day anywhere", () => {
    expect(parseLocalDay("23.11.2026", "ru-RU")).toBe("2026-11-23");
    expect(parseLocalDay("11/23/2026", "en-US")).toBe("2026-11-23");
    expect(parseLocalDay("3/4/2026", "en-GB")).toBe("2026-04-03");
    expect(parseLocalDay("2026-11-23", "en-US")).toBe("2026-11-23");
  });

  it("refuses what is no calendar day", () => {
    expect(parseLocalDay("11/23/2026", "ru-RU")).toBeUndefined();
    expect(parseLocalDay("31.02.2026", "ru-RU")).toBeUndefined();
    expect(parseLocalDay("23.11", "ru-RU")).toBeUndefined();
    expect(parseLocalDay("yesterday", "en-US")).toBeUndefined();
  });
});
