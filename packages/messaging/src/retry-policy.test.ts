import { NonRetryableError } from "./errors";
import { backoffAfter, decideOnFailure, reachableDelays, resolveRetryPolicy } from "./retry-policy";

const policy = resolveRetryPolicy({ maxAttempts: 5, backoffMs: [100, 500] });

test("the n-th failure waits backoffMs[n-1], and the last delay repeats", () => {
  expect([1, 2, 3, 4].map((attempt) => backoffAfter(policy, attempt))).toEqual([100, 500, 500, 500]);
});

test("only the delays a message can reach get a delay queue", () => {
  expect(reachableDelays(policy)).toEqual([100, 500]);
  expect(reachableDelays(resolveRetryPolicy({ maxAttempts: 2, backoffMs: [100, 500] }))).toEqual([100]);
  expect(reachableDelays(resolveRetryPolicy({ maxAttempts: 1 }))).toEqual([]);
});

test("a failure retries until maxAttempts, then dead-letters", () => {
  const error = new Error("boom");
  expect(decideOnFailure(policy, 1, error)).toEqual({ action: "retry", delayMs: 100 });
  expect(decideOnFailure(policy, 4, error)).toEqual({ action: "retry", delayMs: 500 });
  expect(decideOnFailure(policy, 5, error)).toEqual({ action: "dead-letter", reason: "max-attempts" });
});

test("NonRetryableError dead-letters on the first attempt", () => {
  expect(decideOnFailure(policy, 1, new NonRetryableError("no such hold"))).toEqual({ action: "dead-letter", reason: "non-retryable" });
});

test("a policy that cannot work is refused", () => {
  expect(() => resolveRetryPolicy({ maxAttempts: 0 })).toThrow(TypeError);
  expect(() => resolveRetryPolicy({ backoffMs: [] })).toThrow(TypeError);
  expect(() => resolveRetryPolicy({ backoffMs: [10.5] })).toThrow(TypeError);
});
