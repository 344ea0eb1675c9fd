import { createServer, type RequestListener, type Server } from "node:http";
import { closeConnectionsWhileDraining, startDraining } from "./http/draining";
import { answerMalformedRequests } from "./http/malformed-request";
import { createLogger, type Logger } from "./logger";

export interface RunningService {
  /** Stops accepting work, finishes what is in flight, releases connections. */
  close(): Promise<void>;
}

/** What a stopping process is waiting for (stepOfStop), named in the log of a stop that takes long. */
let pendingStep = "the service's close";

/** Runs one step of a close, naming it for the log of a stop that hangs. */
export async function stepOfStop<T>(name: string, step: () => Promise<T> | T): Promise<T> {
  pendingStep = name;
  return await step();
}

/** Every 15 s of a stop: a warning with the step it waits for and the open handles, so a hang names itself. */
const STOP_REPORT_MS = 15_000;

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
    const since = Date.now();
    setInterval(() => {
      const handles: Record<string, number> = {};
      for (const r of process.getActiveResourcesInfo()) handles[r] = (handles[r] ?? 0) + 1;
      logger.warn({ step: pendingStep, waitingMs: Date.now() - since, handles }, "still stopping");
    }, STOP_REPORT_MS).unref();
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

/** What a process started with an IPC channel tells its launcher once it listens. */
export interface ListeningReport {
  type: "listening";
  port: number;
  internalPort?: number;
}

/**
 * Tells a launcher that started this process with port 0 which port it got, whatever the log level
 * (packages/testing's startServiceProcess). Without an IPC channel (every deployment) it does nothing.
 */
function reportListening(report: ListeningReport): void {
  process.send?.(report);
}

/** What a service's composition root hands to serve(): its HTTP handler and how to stop the rest. */
export interface Composition {
  app: RequestListener;
  /** Served on the internal port, where there is one (the gateway's /readyz and /metrics). */
  internalApp?: RequestListener;
  close(): Promise<void>;
}

export interface ServeOptions<C> {
  /** The deployable, for the logs. */
  name: string;
  /** Parses the settings; a bad one stops the process at once, naming every problem. */
  loadConfig: () => C;
  port: (config: C) => number;
  /** A second, internal port for `internalApp` (never to be exposed). */
  internalPort?: (config: C) => number;
  /** The longest a request may take on this server (Node's default of 5 minutes otherwise). */
  requestTimeoutMs?: (config: C) => number;
  /** The service's composition root. */
  compose: (config: C, logger: Logger) => Promise<Composition>;
}

/**
 * The whole of every `main.ts`: settings, logger, the service built by its composition root, the
 * listening server. On SIGINT or SIGTERM it drains: `/readyz` answers 503 at once and every answer
 * closes its connection; after SHUTDOWN_DELAY_MS (the time a load balancer needs to stop sending new
 * connections here) it stops taking connections, lets the requests in flight finish, then closes the
 * rest.
 */
export function serve<C extends { LOG_LEVEL: string; HOST: string; SHUTDOWN_DELAY_MS?: number }>(opts: ServeOptions<C>): void {
  let config: C;
  try {
    config = opts.loadConfig();
  } catch (e) {
    console.error(`${opts.name}: ${(e as Error).message}`);
    process.exit(1);
  }
  const logger = createLogger(opts.name, config.LOG_LEVEL);
  runService(logger, async () => {
    const composition = await opts.compose(config, logger);
    const server = createServer(composition.app);
    closeConnectionsWhileDraining(server);
    answerMalformedRequests(server);
    // Longer than any load balancer's idle timeout, so the balancer closes first (no reset mid-request).
    server.keepAliveTimeout = 65_000;
    if (opts.requestTimeoutMs) server.requestTimeout = opts.requestTimeoutMs(config);
    const port = await listen(server, opts.port(config), config.HOST);
    let internal: Server | undefined;
    let internalPort: number | undefined;
    if (composition.internalApp && opts.internalPort) {
      internal = createServer(composition.internalApp);
      internalPort = await listen(internal, opts.internalPort(config), config.HOST);
    }
    logger.info({ port, ...(internalPort !== undefined ? { internalPort } : {}) }, `${opts.name} listening`);
    reportListening({ type: "listening", port, ...(internalPort !== undefined ? { internalPort } : {}) });
    return {
      close: async () => {
        startDraining();
        const delayMs = config.SHUTDOWN_DELAY_MS ?? 0;
        if (delayMs > 0) {
          logger.info({ delayMs }, "draining: not ready, still serving, closing connections after each answer");
          await stepOfStop("draining", () => new Promise((resolve) => setTimeout(resolve, delayMs)));
        }
        await stepOfStop("the server's requests in flight", () => closeServer(server));
        if (internal) await stepOfStop("the internal server's requests in flight", () => closeServer(internal));
        await stepOfStop("the service's close", () => composition.close());
      },
    };
  });
}
