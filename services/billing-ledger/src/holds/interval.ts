export interface Stoppable {
  /** Stops the timer and waits for a run under way. */
  stop(): Promise<void>;
}

/**
 * Runs `work` every `intervalMs` on its own timer, never two runs at once (a slow run skips ticks
 * instead of piling up), and never keeps the process alive by itself.
 */
export function everyInterval(intervalMs: number, work: () => Promise<unknown>, onError: (e: unknown) => void): Stoppable {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = work()
      .then(
        () => undefined,
        (e: unknown) => onError(e),
      )
      .finally(() => {
        running = undefined;
      });
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
