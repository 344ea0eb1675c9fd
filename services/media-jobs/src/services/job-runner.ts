import { SCOPE_OF_OPERATION, upstreamMediaDefinition } from "@meter/contracts";
import type { FilesClient } from "@meter/service-clients";
import type { Logger } from "@meter/service-kit";
import { InputFileRefused, type InputFiles } from "../adapters/input-files.adapter";
import type { EngineInputs, MediaEngines } from "../adapters/media-engines.adapter";
import type { FinalOutcome, JobRecord, StoredError } from "../domain/job-record";
import { EngineAbortedError, EngineUnavailableError, type EngineResult, type Progress, type RunOptions, type UpstreamMediaResult } from "@meter/media-engines";
import type { JobRepository } from "../repositories/job.repository";
import { isEngineError, jobErrorOf } from "./engine-errors";
import { finishJob } from "./job-finish";
import { billableQuantity, chargeOf } from "./job-pricing";
import type { UpstreamCalls } from "./upstream-calls";

export interface RunnerDeps {
  repo: JobRepository;
  engines: MediaEngines;
  inputs: InputFiles;
  files: Pick<FilesClient, "storeJobResult">;
  /** The calls of jobs on upstream models. */
  upstream: Pick<UpstreamCalls, "routeFor" | "worstCallMs">;
  logger: Logger;
  /** This worker process: the owner it writes on the jobs it runs. */
  workerId: string;
  leaseMs: number;
  /** Runs a job may start before it fails and its hold is released. */
  maxAttempts: number;
  /** A run whose engine reports no progress for this long fails (model_unavailable), its hold released. */
  stallTimeoutMs: number;
  /** Wakes the outbox relay after a commit that wrote a message. */
  onOutbox: () => void;
  /** Progress is written at most this often (and once at the end). */
  progressIntervalMs?: number;
}

/** A dependency failed while running a job: it went back to the queue, and its message is to be retried. */
export class JobInterrupted extends Error {
  constructor(jobId: string, options: { cause: unknown }) {
    super(`job ${jobId} interrupted; queued again`, options);
    this.name = "JobInterrupted";
  }
}

/**
 * Runs a queued job, once, however many times its message arrives:
 *
 *   queued --(claimed: one worker wins, the run counted)--> running
 *   running --(result stored, one file)-------------------> succeeded + billing.hold.settle   (one commit)
 *           --(the engine refused the input)--------------> failed    + billing.hold.release  (one commit)
 *           --(a dependency failed)-----------------------> queued again; the message comes back with back-off
 *           --(this worker died)--------------------------> the lease runs out; the reconciler queues it again
 *
 * A job that has started `maxAttempts` runs without finishing fails, its hold released. The lease is
 * renewed while the job runs; a worker that finds its lease gone stops the run (another may have it). An
 * engine that reports no progress for `stallTimeoutMs` is given up on: the job fails, its hold released,
 * rather than hold money for as long as the worker lives.
 * The result is stored through the files service under the job's id, so a second run of the same job
 * gets the first run's file instead of a second one.
 */
export class JobRunner {
  constructor(private readonly deps: RunnerDeps) {}

  /** Handles one delivery of a job's message: resolves when there is nothing (more) to do, JobInterrupted to retry it. */
  async handle(jobId: string): Promise<void> {
    const job = await this.deps.repo.claimRun(jobId, this.deps.workerId, this.deps.leaseMs, new Date());
    // Final, running elsewhere, or gone: this message is a duplicate (or late), and nothing is done.
    if (!job) return;
    if (job.attempts > this.deps.maxAttempts) {
      await this.finish(failure(job, { code: "internal_error", message: `the job was interrupted ${job.attempts - 1} times; nothing was charged` }));
      return;
    }
    await this.run(job);
  }

  private async run(job: JobRecord): Promise<void> {
    const lease = new LeaseKeeper(this.deps.repo, job, this.deps.leaseMs, this.deps.logger);
    const progress = new ProgressWriter(this.deps.repo, job, this.deps.progressIntervalMs ?? 250, this.deps.logger);
    const upstream = job.plan.upstream;
    // An upstream call reports no progress while it waits: the watch gives it at least its own time bound.
    const stall = new StallWatch(Math.max(this.deps.stallTimeoutMs, upstream ? this.deps.upstream.worstCallMs(upstream.providers.length) : 0));
    try {
      let result: EngineResult & Partial<Pick<UpstreamMediaResult, "upstreamUsage">>;
      try {
        const files = await Promise.all(job.plan.files.map((file) => this.deps.inputs.read(job.userId, file)));
        const { settings, input, edit, prompt } = job.plan;
        const inputs: EngineInputs = {
          files,
          settings,
          ...(input !== undefined ? { input } : {}),
          ...(edit ? { edit } : {}),
          ...(prompt !== undefined ? { prompt } : {}),
        };
        const options: RunOptions = {
          signal: AbortSignal.any([lease.signal, stall.signal]),
          onProgress: (p) => {
            stall.poke();
            progress.report(p);
          },
        };
        result = await stall.race(upstream ? this.runUpstream(job, inputs, options) : this.deps.engines.run(job.plan.engine, job.operation, inputs, options));
        lease.check();
      } catch (e) {
        await progress.settle();
        await this.failed(job, e, lease);
        return;
      }
      await progress.settle();
      await this.succeed(job, result, progress.last);
    } finally {
      stall.stop();
      lease.stop();
    }
  }

  /** A job on an upstream model: its definition is the providers' kind's, its calls routed by UpstreamCalls. */
  private runUpstream(job: JobRecord, inputs: EngineInputs, options: RunOptions): Promise<UpstreamMediaResult> {
    const kind = job.plan.upstream?.providers[0]?.kind;
    const definition = kind ? upstreamMediaDefinition(kind, job.operation) : undefined;
    if (!definition) return Promise.reject(new EngineUnavailableError(`model ${job.model} has no upstream provider that runs ${job.operation}`));
    return this.deps.engines.runUpstream(definition, job.model, inputs, { ...options, route: this.deps.upstream.routeFor(job) });
  }

  /** The run did not produce a result: the job fails if the input is at fault, else it is interrupted. */
  private async failed(job: JobRecord, e: unknown, lease: LeaseKeeper): Promise<void> {
    if (lease.lost) {
      this.deps.logger.warn({ job: job.id }, "lease lost while running; the job is left to whoever holds it now");
      return;
    }
    if (isEngineError(e) && !(e instanceof EngineAbortedError)) {
      this.deps.logger.info({ job: job.id, err: e }, "the engine refused the job; releasing its hold");
      await this.finish(failure(job, jobErrorOf(e)));
      return;
    }
    if (e instanceof InputFileRefused) {
      await this.finish(failure(job, { code: e.code, message: `${e.message}; nothing was charged` }));
      return;
    }
    await this.interrupt(job, e);
  }

  /** Stores the one result file (idempotent per job) and settles what ran, capped at the hold. */
  private async succeed(
    job: JobRecord,
    result: EngineResult & Partial<Pick<UpstreamMediaResult, "upstreamUsage">>,
    lastProgress: Progress | undefined,
  ): Promise<void> {
    let stored;
    try {
      stored = await this.deps.files.storeJobResult({
        jobId: job.id,
        userId: job.userId,
        organizationId: job.organizationId,
        filename: result.filename,
        contentType: result.mimeType,
        sizeBytes: result.data.length,
        body: result.data,
        readScope: SCOPE_OF_OPERATION[job.operation],
      });
    } catch (e) {
      await this.interrupt(job, e);
      return;
    }
    const { tariff, quantity: measured } = job.plan;
    // A run never counts more than was measured; what it counts (a page that turned out blank still counts) is billed.
    const quantity = Math.min(billableQuantity(tariff.unit, result, Math.max(job.plan.files.length, 1)) ?? measured, measured);
    const cost = chargeOf(tariff.price_per_unit_microrub, quantity, job.estimatedCost);
    const file = stored.file;
    await this.finish({
      job,
      state: "succeeded",
      result: { file_id: file.id, mime_type: file.mime_type, size_bytes: file.size_bytes, expires_at: file.expires_at },
      quantity,
      cost,
      progress: lastProgress ? { ...lastProgress, done: lastProgress.total } : { done: quantity, total: quantity, unit: tariff.unit },
      ...(result.upstreamUsage ? { upstreamUsage: result.upstreamUsage } : {}),
    });
  }

  private async finish(outcome: FinalOutcome): Promise<void> {
    const done = await finishJob(this.deps, outcome);
    if (!done) this.deps.logger.warn({ job: outcome.job.id }, "the job moved on before its outcome was stored; left as it is");
  }

  /**
   * A dependency failed (files service, object store, database): the job goes back to the queue and its
   * message is retried with back-off. If even that cannot be written, the lease runs out and the
   * reconciler queues it again. Either way the next run is counted.
   */
  private async interrupt(job: JobRecord, cause: unknown): Promise<void> {
    this.deps.logger.warn({ job: job.id, err: cause, attempt: job.attempts }, "job interrupted by a failing dependency; queued again");
    await this.deps.repo
      .requeue(job, { sendMessage: false })
      .catch((e: unknown) => this.deps.logger.error({ err: e, job: job.id }, "could not queue the job again; its lease will run out"));
    throw new JobInterrupted(job.id, { cause });
  }
}

function failure(job: JobRecord, error: StoredError): FinalOutcome {
  return { job, state: "failed", error, releaseReason: `job failed (${error.code}); nothing charged` };
}

/**
 * Gives up on an engine that has reported no progress for `timeoutMs` (counted from `race`): `race`
 * rejects with EngineUnavailableError (a final failure: the job fails, its hold released) and the engine
 * is told to stop through `signal`. An engine that ignores it runs on unheeded; its outcome is dropped.
 */
class StallWatch {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private giveUp: ((error: Error) => void) | undefined;
  private stopped = false;

  constructor(private readonly timeoutMs: number) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The engine made progress: the clock starts again. */
  poke(): void {
    clearTimeout(this.timer);
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      const error = new EngineUnavailableError(`the engine made no progress for ${this.timeoutMs / 1000} s; nothing was charged`);
      this.giveUp?.(error);
      this.controller.abort(error);
    }, this.timeoutMs);
    this.timer.unref();
  }

  race<T>(work: Promise<T>): Promise<T> {
    // Once given up on, the engine's own late outcome has no one to hear it.
    work.catch(() => undefined);
    const givenUp = new Promise<never>((_resolve, reject) => (this.giveUp = reject));
    this.poke();
    return Promise.race([work, givenUp]);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}

/**
 * Renews a running job's lease every third of it, and aborts the run when the lease is found gone (the
 * job was taken over, or cancelled by an operator): two workers never finish the same run.
 */
class LeaseKeeper {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  lost = false;

  constructor(
    private readonly repo: JobRepository,
    private readonly job: JobRecord,
    leaseMs: number,
    private readonly logger: Logger,
  ) {
    this.timer = setInterval(() => void this.renew(leaseMs), Math.max(100, Math.floor(leaseMs / 3)));
    this.timer.unref();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Throws when the lease was lost while the engine ran, so the result is not stored for a job no longer ours. */
  check(): void {
    if (this.lost) throw new EngineAbortedError();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async renew(leaseMs: number): Promise<void> {
    try {
      if (await this.repo.renewLease(this.job, leaseMs)) return;
      this.lost = true;
      this.stop();
      this.controller.abort(new Error("lease lost"));
    } catch (e) {
      // The database is away: keep running; if it stays away the lease runs out and the run is not stored.
      this.logger.warn({ err: e, job: this.job.id }, "could not renew a job's lease");
    }
  }
}

/**
 * Writes progress at most every `intervalMs` (the first time `intervalMs` after the start), one write at
 * a time, the latest value winning. A job shorter than that writes none: its final progress is committed
 * with its outcome, so a short job costs no extra statement.
 */
class ProgressWriter {
  /** The last progress the engine reported. */
  last: Progress | undefined;
  private writing: Promise<void> | undefined;
  private lastWrite = Date.now();

  constructor(
    private readonly repo: JobRepository,
    private readonly job: JobRecord,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  report(progress: Progress): void {
    this.last = progress;
    if (!this.writing && Date.now() - this.lastWrite >= this.intervalMs) this.writing = this.write(progress);
  }

  /** Waits for the write under way, so none lands after the outcome. */
  async settle(): Promise<void> {
    await this.writing;
  }

  private async write(progress: Progress): Promise<void> {
    this.lastWrite = Date.now();
    try {
      await this.repo.saveProgress(this.job, progress);
    } catch (e) {
      this.logger.warn({ err: e, job: this.job.id }, "progress not written");
    } finally {
      this.writing = undefined;
    }
  }
}
