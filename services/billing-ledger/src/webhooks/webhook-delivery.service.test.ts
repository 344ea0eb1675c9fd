import { afterFailure } from "./webhook-delivery.service";

const retry = { baseMs: 5_000, maxDelayMs: 3_600_000, windowMs: 24 * 3_600_000 };

test("failed attempts are retried after doubling waits, capped, until the 24-hour window ends", () => {
  const created = new Date("2026-11-27T00:00:00Z");
  const waits = [1, 2, 3, 4, 12, 13].map((n) => afterFailure(n, created, created, retry).nextAttemptAt!.getTime() - created.getTime());
  expect(waits).toEqual([5_000, 10_000, 20_000, 40_000, 3_600_000, 3_600_000]);
  const late = new Date(created.getTime() + 23.5 * 3_600_000);
  expect(afterFailure(20, created, late, retry)).toEqual({ status: "failed", nextAttemptAt: null });
});
