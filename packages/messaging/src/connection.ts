import { connect, type ChannelModel } from "amqplib";
import { BusUnavailableError, TopologyNotDeclaredError } from "./errors";
import type { BusLogger } from "./logger";

export interface ReconnectOptions {
  /** First delay after a failed attempt or a lost connection; doubles up to maxDelayMs, with ±20% jitter. */
  initialDelayMs?: number;
  maxDelayMs?: number;
}

interface ConnectionOptions {
  url: string;
  name: string;
  logger: BusLogger;
  reconnect?: ReconnectOptions;
  /** Runs on every fresh connection before anyone sees it; a failure counts as a failed attempt. */
  setup: (model: ChannelModel) => Promise<void>;
}

type ConnectedListener = (model: ChannelModel) => void;
type Waiter = (model: ChannelModel | null) => void;

/** While the topology's owner has not declared the exchanges, another attempt this often (not the backoff: it is the broker's answer, not an outage). */
const TOPOLOGY_RETRY_MS = 1_000;

/**
 * One AMQP connection kept open for the life of the bus: it reconnects with backoff whenever the broker
 * drops it, and tells listeners each time a fresh connection is ready so they can reopen their channels.
 */
export class BusConnection {
  private model: ChannelModel | null = null;
  private closing = false;
  private lastError: Error | undefined;
  /** The broker answered the last attempt, but the topology's owner has not declared the exchanges yet. */
  private awaitingTopology = false;
  private readonly waiters = new Set<Waiter>();
  private readonly topologyWaiters = new Set<() => void>();
  private readonly listeners = new Set<ConnectedListener>();
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: ConnectionOptions) {}

  start(): void {
    this.loop ??= this.run();
  }

  get current(): ChannelModel | null {
    return this.model;
  }

  get isClosed(): boolean {
    return this.closing;
  }

  /** Not connected because the exchanges are not declared yet (it connects again until they are). */
  get waitingForTopology(): boolean {
    return this.model === null && this.awaitingTopology;
  }

  onConnected(listener: ConnectedListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The open connection, waiting up to timeoutMs for one; BusUnavailableError when there is none by then. */
  waitForModel(timeoutMs: number): Promise<ChannelModel> {
    if (this.closing) return Promise.reject(new BusUnavailableError("the bus is closed"));
    if (this.model) return Promise.resolve(this.model);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => {
          this.waiters.delete(waiter);
          reject(new BusUnavailableError(this.unavailableMessage(timeoutMs)));
        },
        Math.max(timeoutMs, 0),
      );
      const waiter: Waiter = (model) => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        if (model) resolve(model);
        else reject(new BusUnavailableError("the bus is closed"));
      };
      this.waiters.add(waiter);
    });
  }

  /**
   * The open connection, or null once the broker has answered that the topology is not declared yet
   * (the connection follows when it is); BusUnavailableError when neither happened within timeoutMs.
   */
  waitForBroker(timeoutMs: number): Promise<ChannelModel | null> {
    if (this.closing) return Promise.reject(new BusUnavailableError("the bus is closed"));
    if (this.model) return Promise.resolve(this.model);
    if (this.awaitingTopology) return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        this.topologyWaiters.delete(topologyMissing);
      };
      const timer = setTimeout(
        () => {
          done();
          reject(new BusUnavailableError(this.unavailableMessage(timeoutMs)));
        },
        Math.max(timeoutMs, 0),
      );
      const waiter: Waiter = (model) => {
        done();
        if (model) resolve(model);
        else reject(new BusUnavailableError("the bus is closed"));
      };
      const topologyMissing = () => {
        done();
        resolve(null);
      };
      this.waiters.add(waiter);
      this.topologyWaiters.add(topologyMissing);
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const waiter of [...this.waiters]) waiter(null);
    this.wake?.();
    const model = this.model;
    this.model = null;
    if (model) await model.close().catch(() => undefined);
    await this.loop;
  }

  private unavailableMessage(timeoutMs: number): string {
    const cause = this.lastError ? `: ${this.lastError.message}` : "";
    return `no connection to the broker within ${timeoutMs} ms${cause}`;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.closing) {
      const opened = await this.open();
      if (!opened && this.awaitingTopology) {
        for (const waiter of [...this.topologyWaiters]) waiter();
        failures = 0;
        await this.pause(TOPOLOGY_RETRY_MS);
        continue;
      }
      if (!opened) {
        failures++;
        await this.pause(this.delay(failures));
        continue;
      }
      failures = 0;
      // close() may have run while the connection was being set up (between open()'s return and
      // here): nobody else would close this model, and the wait below would never end.
      if (this.closing) {
        await opened.model.close().catch(() => undefined);
        break;
      }
      this.serve(opened.model);
      const error = await opened.closed;
      if (this.model === opened.model) this.model = null;
      if (this.closing) break;
      this.lastError = error ?? new Error("connection closed by the broker");
      this.options.logger.warn({ bus: this.options.name, err: this.lastError.message }, "broker connection lost, reconnecting");
      await this.pause(this.delay(1));
    }
  }

  private async open(): Promise<{ model: ChannelModel; closed: Promise<Error | undefined> } | null> {
    let model: ChannelModel | undefined;
    try {
      model = await connect(this.options.url, {
        clientProperties: { connection_name: this.options.name },
        timeout: 10_000,
      });
      const opened = model;
      const closed = new Promise<Error | undefined>((resolve) => opened.once("close", resolve));
      // Without a listener an 'error' event would crash the process; the 'close' that follows is what we act on.
      opened.on("error", (err: Error) => this.options.logger.warn({ bus: this.options.name, err: err.message }, "broker connection error"));
      opened.on("blocked", (reason: string) => this.options.logger.warn({ bus: this.options.name, reason }, "broker blocked publishing"));
      opened.on("unblocked", () => this.options.logger.info({ bus: this.options.name }, "broker unblocked publishing"));
      await this.options.setup(opened);
      if (this.closing) {
        await opened.close().catch(() => undefined);
        return null;
      }
      return { model: opened, closed };
    } catch (err) {
      this.lastError = err instanceof Error ? err : new Error(String(err));
      const topologyMissing = err instanceof TopologyNotDeclaredError;
      // Said once while waiting for the topology's owner, not at every attempt.
      if (!topologyMissing || !this.awaitingTopology) {
        this.options.logger.warn(
          { bus: this.options.name, err: this.lastError.message },
          topologyMissing ? "waiting for the bus topology to be declared" : "broker connection attempt failed",
        );
      }
      this.awaitingTopology = topologyMissing;
      if (model) await model.close().catch(() => undefined);
      return null;
    }
  }

  private serve(model: ChannelModel): void {
    this.model = model;
    this.lastError = undefined;
    this.awaitingTopology = false;
    this.options.logger.info({ bus: this.options.name }, "connected to the broker");
    for (const waiter of [...this.waiters]) waiter(model);
    for (const listener of [...this.listeners]) {
      try {
        listener(model);
      } catch (err) {
        this.options.logger.error({ bus: this.options.name, err }, "connection listener failed");
      }
    }
  }

  private delay(failures: number): number {
    const initial = this.options.reconnect?.initialDelayMs ?? 200;
    const max = this.options.reconnect?.maxDelayMs ?? 30_000;
    const base = Math.min(max, initial * 2 ** Math.min(failures - 1, 30));
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }

  private pause(ms: number): Promise<void> {
    if (this.closing) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
