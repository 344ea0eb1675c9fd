import type { Server } from "node:http";
import type { Logger } from "./logger";

export interface RunningService {
  /** Stops accepting work, finishes what is in flight, releases connections. */
  close(): Promise<void>;
}

/**
 * Runs a service's start function and stops it cleanly on SIGINT/SIGTERM. A failure to start is fatal
 * and exits non-zero, so a supervisor (npm start, Kubernetes) sees it.
 */
export function runService(logger: Logger, start: () => Promise<RunningService>): void {
  let running: RunningService | undefined;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "stopping");
    try {
      await running?.close();
      process.exit(0);
    } catch (e) {
      logger.error({ err: e }, "error while stopping");
      process.exit(1);
    }
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
  start().then(
    (r) => {
      running = r;
    },
    (e: unknown) => {
      logger.fatal({ err: e }, "failed to start");
      process.exit(1);
    },
  );
}

/** Listens and resolves once the port is bound, so callers can print a ready URL. */
export function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const addr = server.address();
      resolve(typeof addr === "object" && addr ? addr.port : port);
    });
  });
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
