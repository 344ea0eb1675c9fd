import { spawn, type ChildProcess } from "node:child_process";

export interface WorkerProcess {
  /** Where its /healthz, /readyz and /metrics answer (it is told to take any free port). */
  url: string;
  /** Everything the process wrote, for a failing test's message. */
  output(): string;
  stop(): Promise<void>;
}

const READY = "files worker running";

/**
 * Runs a worker entry point through tsx, as the local system runner does, and resolves once it logs
 * that it is running. The child dies with this process (SIGTERM on exit) and stop() waits for it.
 */
export async function startWorkerProcess(entry: string, cwd: string, env: Record<string, string>, timeoutMs = 30_000): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    cwd,
    env: { ...process.env, LOG_LEVEL: "info", FILES_WORKER_PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  const echo = process.env.FILES_TEST_WORKER_LOG === "1";
  const collect = (chunk: Buffer) => {
    const text = chunk.toString("utf8");
    if (echo) process.stderr.write(text);
    lines.push(text);
    if (lines.length > 400) lines.splice(0, lines.length - 400);
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  const killOnExit = () => child.kill("SIGTERM");
  process.once("exit", killOnExit);
  const output = () => lines.join("");

  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`worker not running after ${timeoutMs} ms:\n${output()}`)), timeoutMs);
    const onData = () => {
      if (output().includes(READY)) done();
    };
    const onExit = (code: number | null) => fail(new Error(`worker exited (${code}) while starting:\n${output()}`));
    function done() {
      clearTimeout(timer);
      child.stdout.off("data", onData);
      child.off("exit", onExit);
      resolve();
    }
    function fail(error: Error) {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(error);
    }
    child.stdout.on("data", onData);
    child.once("exit", onExit);
  });

  // The ready line is pino's JSON and carries the port the health server took.
  const port = /"port":(\d+)[^\n]*files worker running/.exec(output())?.[1];
  if (port === undefined) throw new Error(`the worker did not say its port:\n${output()}`);

  return {
    url: `http://127.0.0.1:${port}`,
    output,
    async stop() {
      process.removeListener("exit", killOnExit);
      await stopChild(child);
    },
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}
