import { EventEmitter } from "node:events";
import type { IncomingMessage } from "node:http";
import { watchBodyPace, type TooSlow } from "./body-pace";

/** A request whose socket's byte count and paused state the test sets. */
function fakeRequest(contentLength?: number) {
  const req = Object.assign(new EventEmitter(), {
    socket: { bytesRead: 0 },
    headers: contentLength === undefined ? {} : { "content-length": String(contentLength) },
    paused: false,
    isPaused() {
      return this.paused;
    },
  });
  return req;
}

const rule = { minBytesPerSecond: 1000, windowMs: 1000 };

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

function watch(req: ReturnType<typeof fakeRequest>, r: Parameters<typeof watchBodyPace>[1] = rule) {
  const calls: TooSlow[] = [];
  watchBodyPace(req as unknown as IncomingMessage, r, (why) => calls.push(why));
  return calls;
}

test("a window that brings less than the rate is too slow; one that brings it is not", () => {
  const req = fakeRequest();
  const calls = watch(req);
  req.socket.bytesRead += 1000;
  jest.advanceTimersByTime(1000);
  expect(calls).toEqual([]);
  req.socket.bytesRead += 999;
  jest.advanceTimersByTime(1000);
  expect(calls).toEqual(["rate"]);
});

test("a window in which the request was paused (its reader was slow) is not counted", () => {
  const req = fakeRequest();
  const calls = watch(req);
  req.paused = true;
  req.emit("pause");
  jest.advanceTimersByTime(3000);
  req.paused = false;
  jest.advanceTimersByTime(1000);
  expect(calls).toEqual([]);
  jest.advanceTimersByTime(1000);
  expect(calls).toEqual(["rate"]);
});

test("a short body owes only what is left of it, all of it within the window", () => {
  const req = fakeRequest(300);
  const calls = watch(req);
  req.socket.bytesRead += 300;
  jest.advanceTimersByTime(1000);
  expect(calls).toEqual([]);

  const half = fakeRequest(300);
  const halfCalls = watch(half);
  half.socket.bytesRead += 150;
  jest.advanceTimersByTime(1000);
  expect(halfCalls).toEqual(["rate"]);
});

test("the deadline ends a body that keeps the rate but does not end, once", () => {
  const req = fakeRequest();
  const calls = watch(req, { ...rule, timeoutMs: 2500 });
  for (let i = 0; i < 5; i++) {
    req.socket.bytesRead += 2000;
    jest.advanceTimersByTime(1000);
  }
  expect(calls).toEqual(["deadline"]);
});

test("a body that ended is no longer watched", () => {
  const req = fakeRequest();
  const calls = watch(req, { ...rule, timeoutMs: 2500 });
  req.emit("end");
  jest.advanceTimersByTime(10_000);
  expect(calls).toEqual([]);
});
