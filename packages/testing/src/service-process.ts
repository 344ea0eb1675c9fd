import { spawn, type ChildProcess } from "node:child_process";
import type { ListeningReport } from "@meter/service-kit";

export interface ServiceProcess {
  /** Where it answers: the port it took and reported. */
  url: string;
  /** Its internal port's URL, when it has one (the gateway's /readyz and /metrics). */
  internalUrl: string | undefined;
  pid: number;
  /** Everything the process wrote, for a failing test's message. */
  output(): string;
  stop(): Promise<void>;
  /** SIGKILL: the process dies mid-work, as in a crash or an OOM kill. Resolves once it is gone. */
  kill(): Promise<void>;
}

/**
 * Runs a service entry point (main.ts, worker.ts) as its own process through tsx, as the local system
 * runner does, and resolves once it listens. Give it port 0 in `env` (`FILES_PORT: "0"`): the process
 * takes any port and reports the one it got over an IPC channel (service-kit's serve), so no port is
 * picked here for it to bind later (docs/architecture.md, "Tests"). The child dies with this process
 * (SIGTERM on exit) and stop() waits for it; kill() is a crash. METER_TEST_PROCESS_LOG=1 echoes its output.
 */
export async function startServiceProcess(entry: string, cwd: string, env: Record<string, string>, timeoutMs = 30_000): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    cwd,
    env: { ...process.env, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  const lines: string[] = [];
  const echo = process.env.METER_TEST_PROCESS_LOG === "1";
  const collect = (chunk: Buffer) => {
    const text = chunk.toString("utf8");
    if (echo) process.stderr.write(text);
    lines.push(text);
    if (lines.length > 400) lines.splice(0, lines.length - 400);
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  const killOnExit = () => child.kill("SIGTERM");
  process.once("exit", killOnExit);
  const output = () => lines.join("");

  const report = await new Promise<ListeningReport>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`${entry} not listening after ${timeoutMs} ms:\n${output()}`)), timeoutMs);
    const onMessage = (message: unknown) => {
      if ((message as Partial<ListeningReport> | null)?.type !== "listening") return;
      settle();
      resolve(message as ListeningReport);
    };
    // The output a failing start wrote may still be in the pipes when 'exit' comes; 'close' waits for it.
    const onClose = (code: number | null) => fail(new Error(`${entry} exited (${code}) while starting:\n${output()}`));
    function settle() {
      clearTimeout(timer);
      child.off("message", onMessage);
      child.off("close", onClose);
    }
    function fail(error: Error) {
      settle();
      child.kill("SIGKILL");
      reject(error);
    }
    child.on("message", onMessage);
    child.once("close", onClose);
  });
  // Nothing more comes over it; an open channel would hold this process's event loop.
  child.disconnect();
  if (child.pid === undefined) throw new Error(`${entry} has no pid`);

  return {
    url: `http://127.0.0.1:${report.port}`,
    internalUrl: report.internalPort === undefined ? undefined : `http://127.0.0.1:${report.internalPort}`,
    pid: child.pid,
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
