import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { AppError, type Logger } from "@meter/service-kit";
import type { ObjectStore } from "../adapters/object-store";
import type { UploadLock, UploadLocks } from "../adapters/upload-locks";
import { FilesErrors } from "../errors";
import type { Clock, FilesPolicy } from "../domain/policy";
import type { FileRepository, StoredFile } from "../repositories/file.repository";

export interface UploadAttemptServiceDeps {
  files: FileRepository;
  store: ObjectStore;
  locks: UploadLocks;
  policy: Pick<FilesPolicy, "uploadLeaseMs" | "uploadIdleTimeoutMs">;
  clock: Clock;
  logger: Logger;
}

/** Recorded on the row, so an operator can tell which process an `uploading` file is waiting on. */
const STREAMER = `${hostname()}/${process.pid}`;

/** One PUT's hold on a file, from its claim until it finishes or gives up. */
export class UploadAttempt {
  private lastProgress = performance.now();
  private bodyDone = false;

  constructor(
    readonly id: string,
    readonly fileId: string,
    /** Its own object: an attempt taken over can never overwrite or delete its successor's bytes. */
    readonly objectKey: string,
    private readonly controller: AbortController,
    readonly lock: UploadLock,
  ) {}

  /** Aborted when the attempt must stop: its lock or its claim was lost, or no bytes came for too long. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Passes the body through, noting when bytes last moved; stops at the next chunk once aborted. */
  async *track(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    for await (const chunk of source) {
      this.signal.throwIfAborted();
      this.lastProgress = performance.now();
      yield chunk;
    }
    this.bodyDone = true;
  }

  /** True while the body is still expected and nothing has moved since `before` (a performance.now() time). */
  stalledSince(before: number): boolean {
    return !this.bodyDone && this.lastProgress < before;
  }

  abort(reason: Error): void {
    this.controller.abort(reason);
  }
}

/**
 * Which PUT streams a file, so that an interrupted upload can be retried at once and a live one is
 * never raced:
 * - A PUT takes the file's upload lock (held by its process's database session, so it is free the
 *   moment that process dies), then claims the row with a fresh attempt id, its own object key and a
 *   lease. The lock tells a retry, right away, that nobody streams; the lease tells queries (quota,
 *   visibility, the sweeper) the same thing, a lease later, for processes that cannot ask the lock.
 * - While it streams, one timer per process renews the leases of all its attempts in one statement.
 *   An attempt loses when its row is no longer its own (deleted, expired, taken over) or its lock's
 *   session ended, and stops; an attempt whose body stalls for `uploadIdleTimeoutMs` stops too, so a
 *   client that vanished without closing its connection does not hold the file.
 * - A file found `uploading` with its lock free was left by a dead process: the newcomer deletes
 *   that attempt's object and takes the row over from that exact attempt (compare-and-set).
 */
export class UploadAttemptService {
  private readonly active = new Set<UploadAttempt>();
  private timer: NodeJS.Timeout | undefined;
  private beating = false;

  constructor(private readonly deps: UploadAttemptServiceDeps) {}

  /**
   * Claims `fileId` for a new PUT. 409 while another PUT streams it; the file's state decides the
   * other refusals. The caller must end() what it gets, whatever happens.
   */
  async begin(fileId: string): Promise<UploadAttempt> {
    const { files, clock, policy } = this.deps;
    const lock = await this.tryLock(fileId);
    if (!lock) throw FilesErrors.uploadInProgress();
    try {
      // Read under the lock: nobody else can be starting or finishing an attempt on this file now.
      const current = await files.find(fileId);
      refuseUnlessUploadable(current);
      if (current.status === "uploading") await this.removeLeftovers(current);
      const now = clock.now();
      const attemptId = randomUUID();
      const claim = {
        attemptId,
        objectKey: `uploads/${fileId}/${attemptId}`,
        streamer: STREAMER,
        now,
        leaseExpiresAt: new Date(now.getTime() + policy.uploadLeaseMs),
      };
      if (!(await files.claimUpload(fileId, current, claim))) {
        // Completed, deleted or expired between the read and the claim, or the link died.
        refuseUnlessUploadable(await files.find(fileId));
        throw FilesErrors.uploadLinkExpired();
      }
      const controller = new AbortController();
      const attempt = new UploadAttempt(attemptId, fileId, claim.objectKey, controller, lock);
      const onLockLost = () => attempt.abort(lock.lost.reason as Error);
      if (lock.lost.aborted) onLockLost();
      else lock.lost.addEventListener("abort", onLockLost, { once: true });
      this.watch(attempt);
      return attempt;
    } catch (error) {
      await lock.release();
      throw error;
    }
  }

  /**
   * After a PUT failed: deletes what it stored and makes the link usable again. If the object cannot
   * be deleted now the row stays `uploading`; the lock is free, so the next PUT or completion deletes
   * it, and the sweeper does once the link is dead.
   */
  async abandon(attempt: UploadAttempt): Promise<void> {
    try {
      await this.deps.store.remove(attempt.objectKey);
      await this.deps.files.releaseUpload(attempt.fileId, attempt.id);
    } catch (error) {
      this.deps.logger.warn({ err: error, file_id: attempt.fileId, attempt_id: attempt.id }, "could not clear a failed upload now");
    }
  }

  /** Lets go of the file: no more lease renewals, and the lock is freed for the next PUT. */
  async end(attempt: UploadAttempt): Promise<void> {
    this.active.delete(attempt);
    if (this.active.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
    await attempt.lock.release();
  }

  /**
   * For completion: a file found `uploading` whose PUT died goes back to waiting for its bytes (its
   * leftovers deleted). False while a PUT streams it (or may: a row an older version claimed).
   */
  async releaseIfAbandoned(fileId: string): Promise<boolean> {
    const lock = await this.tryLock(fileId);
    if (!lock) return false;
    try {
      const current = await this.deps.files.find(fileId);
      if (current?.status !== "uploading") return true;
      if (current.uploadAttemptId === null) return false;
      await this.removeLeftovers(current);
      await this.deps.files.releaseUpload(current.id, current.uploadAttemptId);
      return true;
    } finally {
      await lock.release();
    }
  }

  private async tryLock(fileId: string): Promise<UploadLock | undefined> {
    try {
      return await this.deps.locks.tryAcquire(fileId);
    } catch (error) {
      // The lock's database session is down; nothing was changed, so the client may simply retry.
      throw new AppError("service_unavailable", "uploads are unavailable for a moment; try again", { cause: error });
    }
  }

  /** The object an attempt of a dead process may have left (S3 keeps nothing of a cut PUT; other stores might). */
  private async removeLeftovers(file: StoredFile): Promise<void> {
    // Claimed by an older version, which takes no lock: a free lock says nothing about its streamer.
    if (file.uploadAttemptId === null) throw FilesErrors.uploadInProgress();
    try {
      await this.deps.store.remove(file.objectKey);
    } catch (error) {
      throw new AppError("service_unavailable", "the interrupted upload could not be cleared; try again", { cause: error });
    }
    this.deps.logger.info({ file_id: file.id, attempt_id: file.uploadAttemptId }, "taking over an upload whose process is gone");
  }

  private watch(attempt: UploadAttempt): void {
    this.active.add(attempt);
    if (this.timer) return;
    // A third of the lease: two renewals can fail before a live attempt looks dead to the queries.
    this.timer = setInterval(() => void this.beat(), Math.max(50, Math.floor(this.deps.policy.uploadLeaseMs / 3)));
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    if (this.beating) return;
    this.beating = true;
    const { files, clock, policy, logger } = this.deps;
    try {
      const idleBefore = performance.now() - policy.uploadIdleTimeoutMs;
      for (const attempt of this.active) {
        if (attempt.stalledSince(idleBefore)) attempt.abort(new Error(`no bytes for ${policy.uploadIdleTimeoutMs} ms`));
      }
      const streaming = [...this.active].filter((a) => !a.signal.aborted);
      if (streaming.length === 0) return;
      const kept = await files.renewUploadLeases(
        streaming.map((a) => ({ fileId: a.fileId, attemptId: a.id })),
        new Date(clock.now().getTime() + policy.uploadLeaseMs),
      );
      for (const attempt of streaming) {
        // One that ended meanwhile was cleared by its own finish, not lost.
        if (!kept.has(attempt.id) && this.active.has(attempt)) attempt.abort(new Error("the file is no longer this upload's"));
      }
    } catch (error) {
      // The next beat tries again; the lease outlives two missed ones.
      logger.warn({ err: error, attempts: this.active.size }, "could not renew upload leases");
    } finally {
      this.beating = false;
    }
  }
}

/** A link leads to one upload: refused once the file has moved on, or when it is gone. */
export function refuseUnlessUploadable(file: StoredFile | undefined): asserts file is StoredFile {
  switch (file?.status) {
    case "awaiting_upload":
    case "uploading":
      return;
    case "uploaded":
    case "verifying":
    case "verified":
    case "rejected":
      throw FilesErrors.uploadAlreadyCompleted(file.status);
    default:
      // Deleted or expired: the link no longer leads anywhere.
      throw FilesErrors.invalidUploadLink();
  }
}
