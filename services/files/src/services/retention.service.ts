import type { Logger } from "@meter/service-kit";
import type { ObjectStore } from "../adapters/object-store";
import type { Clock, FilesPolicy } from "../domain/policy";
import type { FileRepository } from "../repositories/file.repository";

export interface RetentionServiceDeps {
  files: FileRepository;
  store: ObjectStore;
  policy: FilesPolicy;
  clock: Clock;
  logger: Logger;
  kickOutbox: () => void;
}

export interface SweepResult {
  expired: number;
  purged: number;
  requeued: number;
}

const BATCH = 100;

/**
 * The retention sweeper. Each pass, in chunks of BATCH rows (one short statement or transaction each,
 * found through partial indexes that leave out finished rows: see SweepSql):
 * 1. expires what is due (7 days after creation; upload links that died with no PUT streaming, used
 *    or not), which frees their quota with the state change;
 * 2. deletes the objects of rejected, deleted and expired files that still have one;
 * 3. sends files stuck `verifying` (their message dead-lettered or lost) to the worker again.
 * Every step claims rows with FOR UPDATE SKIP LOCKED, so any number of replicas can sweep at once.
 */
export class RetentionService {
  constructor(private readonly deps: RetentionServiceDeps) {}

  async sweep(): Promise<SweepResult> {
    const { files, store, policy, clock } = this.deps;
    const now = clock.now();
    let expired = 0;
    let batch: number;
    do {
      batch = (await files.expireRetentionDue(now, BATCH)).length;
      expired += batch;
    } while (batch === BATCH);
    do {
      batch = (await files.expireDeadUploads(now, BATCH)).length;
      expired += batch;
    } while (batch === BATCH);
    let purged = 0;
    do {
      batch = await files.purgeObjects(BATCH, now, (key) => store.remove(key));
      purged += batch;
    } while (batch === BATCH);
    const requeued = await files.requeueStaleVerifications(new Date(now.getTime() - policy.verifyRequeueAfterMs), now, BATCH);
    if (requeued > 0) this.deps.kickOutbox();
    return { expired, purged, requeued };
  }

  /** Sweeps every `intervalMs`; stop() waits for a pass under way. */
  start(intervalMs: number): { stop(): Promise<void> } {
    let running: Promise<void> | undefined;
    const timer = setInterval(() => {
      running ??= this.sweep()
        .then((r) => {
          if (r.expired + r.purged + r.requeued > 0) this.deps.logger.info(r, "retention sweep");
        })
        .catch((e: unknown) => this.deps.logger.error({ err: e }, "retention sweep failed"))
        .finally(() => {
          running = undefined;
        });
    }, intervalMs);
    timer.unref();
    return {
      stop: async () => {
        clearInterval(timer);
        await running;
      },
    };
  }
}
