import { AsyncLocalStorage } from "node:async_hooks";
import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import path from "node:path";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { RequestHandler } from "express";

/**
 * An opt-in recorder of where one request's time goes (`pnpm bench:text`'s waterfall mode): with
 * METER_TIMINGS_DIR set, each process appends one JSON line per request to `<dir>/<service>.<pid>.jsonl`
 * with named marks on the machine-wide monotonic clock, so the marks of the gateway, a service and the
 * bench line up. Unset (every deployment), every function here returns at once and nothing is kept.
 */

/** Microseconds on CLOCK_MONOTONIC (process.hrtime): the same clock in every process of one machine. */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

interface Trace {
  marks: [string, number][];
}

const TRACE = Symbol("request timings");
type Traced = IncomingMessage & { [TRACE]?: Trace };

const current = new AsyncLocalStorage<Trace>();
/** Read once at start: whether marks are taken at all. */
let dir: string | undefined = process.env.METER_TIMINGS_DIR || undefined;
let sink: { fd: number; service: string } | undefined;

/** Whether this process records timings (METER_TIMINGS_DIR was set when it started). */
export function timingsEnabled(): boolean {
  return dir !== undefined;
}

/** Opens this process's timings file, if it records timings; called once by createServiceApp. */
export function startTimings(service: string, into = dir): void {
  if (!into || sink) return;
  dir = into;
  mkdirSync(into, { recursive: true });
  sink = { fd: openSync(path.join(into, `${service}.${process.pid}.jsonl`), "a"), service };
}

/** Stops recording (tests). */
export function stopTimings(): void {
  if (sink) closeSync(sink.fd);
  sink = undefined;
  dir = undefined;
}

function add(trace: Trace | undefined, name: string): void {
  if (!trace) return;
  // A step that happens twice in one request (two queries) keeps both: `db.query.start`, `db.query.start#2`.
  let key = name;
  for (let n = 2; trace.marks.some(([m]) => m === key); n++) key = `${name}#${n}`;
  trace.marks.push([key, monotonicUs()]);
}

/** Marks a moment of the request this code runs for (found through its async context). */
export function mark(name: string): void {
  if (dir) add(current.getStore(), name);
}

/** Marks a moment of `req`'s request: for code that runs from stream events, outside its async context. */
export function markRequest(req: IncomingMessage, name: string): void {
  if (dir) add((req as Traced)[TRACE], name);
}

/** Times an async step: `<name>.start` and `<name>.end` marks around it. */
export function timed<T>(name: string, fn: () => Promise<T>): Promise<T> {
  if (!dir) return fn();
  mark(`${name}.start`);
  return fn().finally(() => mark(`${name}.end`));
}

/**
 * The object with some of its async methods timed (see timed), as a view that leaves the object itself
 * untouched (it may be shared); the object itself when timings are off.
 */
export function timeMethods<T extends object>(target: T, names: Partial<Record<keyof T & string, string>>): T {
  if (!dir) return target;
  const view = Object.create(target) as Record<string, unknown>;
  for (const [method, label] of Object.entries(names) as [keyof T & string, string][]) {
    const original = target[method] as unknown as (...args: unknown[]) => Promise<unknown>;
    view[method] = (...args: unknown[]) => timed(label, () => original.apply(target, args));
  }
  return view as T;
}

/**
 * The first middleware: opens the request's trace (`in`), and writes it when the answer has been
 * handed to the socket (`out`), with the request id the frame gave it.
 */
export function timingMiddleware(): RequestHandler | undefined {
  if (!sink) return undefined;
  return (req, res, next) => {
    const trace: Trace = { marks: [["in", monotonicUs()]] };
    (req as Traced)[TRACE] = trace;
    res.once("finish", () => write(req, res, trace));
    current.run(trace, next);
  };
}

/**
 * Re-enters the request's trace after a body was read: the body parser calls on from the socket's
 * events, where the async context of the request is lost.
 */
export function resumeTimings(): RequestHandler | undefined {
  if (!sink) return undefined;
  return (req, _res, next) => {
    const trace = (req as Traced)[TRACE];
    if (trace) current.enterWith(trace);
    next();
  };
}

function write(req: IncomingMessage, res: ServerResponse, trace: Trace): void {
  add(trace, "out");
  if (!sink) return;
  const rid = (req as { requestId?: string }).requestId ?? res.getHeader("x-request-id");
  const line = JSON.stringify({ service: sink.service, pid: process.pid, rid, method: req.method, url: req.url, status: res.statusCode, marks: trace.marks });
  writeSync(sink.fd, `${line}\n`);
}
