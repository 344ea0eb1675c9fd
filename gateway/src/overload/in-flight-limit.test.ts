import { InFlightLimit } from "./in-flight-limit";

test("admits up to the bound per name, and one more once a request is over", () => {
  const limit = new InFlightLimit(2);
  const first = limit.tryAcquire("key-a");
  const second = limit.tryAcquire("key-a");
  expect(first && second).toBeDefined();
  expect(limit.tryAcquire("key-a")).toBeUndefined();
  expect(limit.tryAcquire("key-b")).toBeDefined();

  first!();
  expect(limit.inFlight("key-a")).toBe(1);
  expect(limit.tryAcquire("key-a")).toBeDefined();
});

test("releasing twice frees one place, not two", () => {
  const limit = new InFlightLimit(1);
  const release = limit.tryAcquire("svc")!;
  release();
  release();
  expect(limit.tryAcquire("svc")).toBeDefined();
  expect(limit.tryAcquire("svc")).toBeUndefined();
});

test("a bound below 1 is refused", () => {
  expect(() => new InFlightLimit(0)).toThrow(RangeError);
});
