import type { ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";

const TAIL_BYTES = 8 * 1024;

/**
 * Keeps the last few KB a child wrote, for error messages, and optionally forwards each line.
 * Always draining the pipe matters: a child whose pipe fills up blocks on its next write.
 */
export class OutputTail {
  private text = "";

  constructor(private readonly forward?: (line: string) => void) {}

  attach(stream: Readable | null): void {
    if (!stream) return;
    stream.setEncoding("utf8");
    let partial = "";
    stream.on("data", (chunk: string) => {
      this.text = (this.text + chunk).slice(-TAIL_BYTES);
      if (!this.forward) return;
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) if (line.trim() !== "") this.forward(line);
    });
  }

  toString(): string {
    return this.text.trim();
  }
}

export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Resolves once the child has exited (immediately if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (hasExited(child)) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

/** SIGTERM, then SIGKILL if the child is still there after `graceMs`. */
export async function terminate(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (hasExited(child)) return;
  // An unref'd child would otherwise let the process end before the exit is seen.
  child.ref();
  const gone = exited(child);
  child.kill("SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), graceMs);
  });
  const outcome = await Promise.race([gone, late]);
  clearTimeout(timer);
  if (outcome === "late") {
    child.kill("SIGKILL");
    await gone;
  }
}

/**
 * A child we started must not outlive a parent that exits without calling stop() (an uncaught
 * error, process.exit). `kill` is synchronous, so it is allowed in an 'exit' listener.
 * A SIGKILLed parent runs no listener: the next start then finds the orphan and reuses it.
 */
export function killOnParentExit(child: ChildProcess): () => void {
  const onExit = () => {
    if (!hasExited(child)) child.kill("SIGTERM");
  };
  process.once("exit", onExit);
  const forget = () => process.removeListener("exit", onExit);
  child.once("exit", forget);
  return forget;
}

/**
 * Lets the caller's process end when nothing of its own is left to do; the child is then
 * stopped by killOnParentExit instead of holding the process (or a test runner) open.
 */
export function detachFromEventLoop(child: ChildProcess): void {
  child.unref();
  child.channel?.unref();
  for (const stream of [child.stdout, child.stderr]) (stream as { unref?: () => void } | null)?.unref?.();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
