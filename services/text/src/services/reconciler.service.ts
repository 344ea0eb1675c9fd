import type { Logger } from "@meter/service-kit";
import type { TextRequestRepository } from "../repositories/text-request.repository";
import type { TextRunner } from "./text-runner";

export interface ReconcilerOptions {
  workerId: string;
  intervalMs: number;
  /** A process whose heartbeat is older than this is taken for dead and its requests are taken over. */
  staleMs: number;
  retentionMs: number;
  batch?: number;
}

/**
 * Finishes what nobody is finishing: requests parked after an unknown outcome or an unreachable
 * billing, and every unfinished request of a process that died (its heartbeat stopped). Each is taken
 * over with a guarded update (one new owner wins) and driven to a final state by the runner, which only
 * repeats idempotent calls; so after any crash each hold is eventually settled or released exactly once.
 */
export class Reconciler {
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private lastHeartbeat = 0;
  private lastPurge = 0;

  constructor(
    private readonly repo: TextRequestRepository,
    private readonly runner: TextRunner,
    private readonly logger: Logger,
    private readonly opts: ReconcilerOptions,
  ) {}

  async start(): Promise<void> {
    await this.repo.heartbeat(this.opts.workerId);
    this.lastHeartbeat = Date.now();
    this.timer = setInterval(() => void this.tick(), this.opts.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.repo.retire(this.opts.workerId).catch(() => undefined);
  }

  /** One pass; returns how many records it took up. Exposed for tests. */
  async tick(): Promise<number> {
    if (this.ticking) return 0;
    this.ticking = true;
    try {
      const now = Date.now();
      if (now - this.lastHeartbeat >= this.opts.staleMs / 3) {
        await this.repo.heartbeat(this.opts.workerId);
        this.lastHeartbeat = now;
      }
      if (now - this.lastPurge >= 3_600_000) {
        this.lastPurge = now;
        const purged = await this.repo.purge(this.opts.retentionMs);
        if (purged) this.logger.info({ purged }, "purged idempotency records past retention");
      }
      const due = await this.repo.due(this.opts.workerId, this.opts.staleMs, this.opts.batch ?? 50);
      let taken = 0;
      for (const record of due) {
        if (this.runner.isActive(record.id)) continue;
        const mine = record.ownerId === this.opts.workerId ? record : await this.repo.transition(record, { ownerId: this.opts.workerId });
        if (!mine) continue;
        if (record.ownerId !== this.opts.workerId) {
          this.logger.warn({ request: record.id, state: record.state, previousOwner: record.ownerId }, "taking over a request of a stopped process");
        }
        taken++;
        this.runner.drive(mine).catch((e: unknown) => this.logger.error({ err: e, request: record.id }, "reconciling a text request failed; will retry"));
      }
      return taken;
    } catch (e) {
      this.logger.error({ err: e }, "reconciler pass failed");
      return 0;
    } finally {
      this.ticking = false;
    }
  }
}
