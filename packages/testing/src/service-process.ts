import { spawn, type ChildProcess } from "node:child_process";

export interface ServiceProcess {
  /** Where it answers (it is told to take any free port). */
  url: string;
  /** Everything the process wrote, for a failing test's message. */
  output(): string;
  stop(): Promise<void>;
  /** SIGKILL: the process dies mid-work, as in a crash or an OOM kill. Resolves once it is gone. */
  kill(): Promise<void>;
}

/**
 * Runs a service entry point (main.ts, worker.ts) as its own process through tsx, as the local system
 * runner does, and resolves once it logs `ready` (with the port it took, `env` having told it to take
 * any). The child dies with this process (SIGTERM on exit) and stop() waits for it; kill() is a crash.
 * METER_TEST_PROCESS_LOG=1 echoes its output.
 */
export async function startServiceProcess(entry: string, cwd: string, env: Record<string, string>, ready: string, timeoutMs = 30_000): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    cwd,
    env: { ...process.env, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  const echo = process.env.METER_TEST_PROCESS_LOG === "1";
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
    const timer = setTimeout(() => fail(new Error(`${entry} not ready after ${timeoutMs} ms:\n${output()}`)), timeoutMs);
    const onData = () => {
      if (output().includes(ready)) done();
    };
    const onExit = (code: number | null) => fail(new Error(`${entry} exited (${code}) while starting:\n${output()}`));
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

  // The ready line is pino's JSON and carries the port the server took.
  const port = new RegExp(`"port":(\\d+)[^\\n]*${ready}`).exec(output())?.[1];
  if (port === undefined) throw new Error(`${entry} did not say its port:\n${output()}`);

  return {
    url: `http://127.0.0.1:${port}`,
    output,
    async stop() {
      process.removeListener("exit", killOnExit);
      await stopChild(child);
    },
    async kill() {
      process.removeListener("exit", killOnExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGKILL");
      await exited;
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
