/**
 * What a bench started, stopped in reverse order when it ends or on Ctrl-C, once: a stop that fails is
 * reported and the others still run, so no database, vhost or process outlives the run.
 */
export function cleanupOnExit(): { add(stop: () => Promise<unknown>): void; run(): Promise<void> } {
  const stops: (() => Promise<unknown>)[] = [];
  let running: Promise<void> | undefined;
  const run = () =>
    (running ??= (async () => {
      for (const stop of stops.reverse()) await stop().catch((e: unknown) => console.error(`cleanup: ${String(e)}`));
    })());
  process.once("SIGINT", () => void run().then(() => process.exit(130)));
  return { add: (stop) => void stops.push(stop), run };
}
