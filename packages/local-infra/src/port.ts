import { randomInt } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

/** Fails early with a plain message instead of a bind or connect error naming something else. */
export function assertPort(port: number, what: string): void {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`${what}: port must be an integer from 1 to 65535, got ${port}`);
}

/**
 * How a test gives a child process a port (docs/architecture.md, "Tests", Ports). A child that nobody has to know
 * the address of in advance binds port 0 and reports what it got (startServiceProcess reads it from the
 * service's `listening` line, the object store sends it over IPC). Processes that need each other's
 * addresses before they start (a system, whose services call each other both ways) are given ports
 * from here, and their start is retried with other ports when one of them finds its port taken.
 *
 * The ports come from below the kernel's ephemeral range: a port picked "free" inside that range (what
 * `listen(0)` then close hands out) can become the local end of any process's next outgoing connection
 * before the child binds it, and there nothing but luck helps. Below the range only an explicit bind
 * can take it, which the child sees as EADDRINUSE and the launcher answers with a retry.
 */
const FALLBACK_EPHEMERAL = { low: 32768, high: 60999 };
/** The bottom of the range ports are assigned from (and no lower: well-known services live there). */
const ASSIGNED_FLOOR = 20000;
/** Whole starts tried before giving up: each retry takes new ports, so two collisions in a row are rare. */
const DEFAULT_ATTEMPTS = 4;

/** The kernel's range for ephemeral ports (Linux); elsewhere the usual default. */
export function ephemeralPortRange(): { low: number; high: number } {
  try {
    const [low, high] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    if (low !== undefined && high !== undefined && Number.isInteger(low) && Number.isInteger(high)) return { low, high };
  } catch {
    // not Linux: the common default
  }
  return FALLBACK_EPHEMERAL;
}

/** The ports assignPorts picks from: below the ephemeral range, or above it when that range starts too low. */
function assignableRange(): { from: number; to: number } {
  const { low, high } = ephemeralPortRange();
  if (low - ASSIGNED_FLOOR >= 1000) return { from: ASSIGNED_FLOOR, to: low - 1 };
  return { from: Math.max(high + 1, 1024), to: 65535 };
}

function bindable(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, host, () => probe.close(() => resolve(true)));
  });
}

/** `count` distinct ports outside the ephemeral range, each bindable on `host` when picked. */
export async function assignPorts(count: number, host = "127.0.0.1"): Promise<number[]> {
  const { from, to } = assignableRange();
  const ports = new Set<number>();
  for (let tries = 0; ports.size < count; tries++) {
    if (tries > count * 50) throw new Error(`could not find ${count} bindable ports from ${from} to ${to} on ${host}`);
    const port = randomInt(from, to + 1);
    if (!ports.has(port) && (await bindable(port, host))) ports.add(port);
  }
  return [...ports];
}

/** Whether a failed start failed because a port was taken: the error itself, or a child's output in its message. */
export function isAddressInUse(error: unknown): boolean {
  if ((error as NodeJS.ErrnoException | undefined)?.code === "EADDRINUSE") return true;
  return /EADDRINUSE|address already in use/i.test(error instanceof Error ? error.message : String(error));
}

/**
 * Runs `start` with `count` assigned ports; when it fails because one of them was taken meanwhile, runs
 * it again with new ones (`start` must have cleaned up after itself, as a failed start does).
 */
export async function withAssignedPorts<T>(count: number, start: (ports: number[]) => Promise<T>, opts: { attempts?: number; host?: string } = {}): Promise<T> {
  const attempts = opts.attempts ?? DEFAULT_ATTEMPTS;
  for (let attempt = 1; ; attempt++) {
    const ports = await assignPorts(count, opts.host);
    try {
      return await start(ports);
    } catch (error) {
      if (attempt >= attempts || !isAddressInUse(error)) throw error;
    }
  }
}

/**
 * Binds a port a process had before (a restart: the others know its address) and retries while it is
 * taken, which only an explicit bind outside the ephemeral range can do, for at most `withinMs`.
 */
export async function retryWhileAddressInUse<T>(start: () => Promise<T>, withinMs = 15_000): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    try {
      return await start();
    } catch (error) {
      if (Date.now() > deadline || !isAddressInUse(error)) throw error;
      await sleep(250);
    }
  }
}
