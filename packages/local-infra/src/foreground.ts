/** Runs local pieces in the foreground until Ctrl-C (SIGINT) or SIGTERM, then stops them. */
export async function runInForeground(name: string, start: () => Promise<{ stop(): Promise<void> }>): Promise<void> {
  const log = (line: string) => console.error(`[${name}] ${line}`);
  let running: { stop(): Promise<void> };
  try {
    running = await start();
  } catch (error) {
    log(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
  log("running; Ctrl-C stops it");
  // A reused server leaves this process nothing to wait on: keep it alive until a signal.
  setInterval(() => {}, 1 << 30);
  const shutdown = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping`);
    running.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log(`stop failed: ${String(error)}`);
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
}
