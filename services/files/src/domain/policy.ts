/** Time as the rules see it; tests move it forward instead of waiting. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** The numbers the rules run on. The spec fixes the link lifetime and retention; tests shrink the rest. */
export interface FilesPolicy {
  maxFileBytes: number;
  /** Width x height from an image's header; more is rejected `image_too_large` before the scan. */
  maxImagePixels: number;
  /** Per user, across organizations: declared sizes of live uploads (job results are not counted). */
  quotaBytes: number;
  uploadLinkTtlMs: number;
  retentionMs: number;
  /** How long the completion call waits for the verdict before answering 202. */
  completeWaitMs: number;
  completePollMs: number;
  /** A file `verifying` this long after its last request gets another (the first may have been dead-lettered). */
  verifyRequeueAfterMs: number;
  /**
   * How long a streaming PUT's claim holds without renewal (renewed every third of it). Past it, with
   * its link dead too, an upload no longer counts against the quota and is expired.
   */
  uploadLeaseMs: number;
  /** A PUT whose body stalls this long is stopped, so a vanished client does not hold the file. */
  uploadIdleTimeoutMs: number;
}

export const DEFAULT_POLICY: FilesPolicy = {
  maxFileBytes: 50 * 1024 * 1024,
  maxImagePixels: 100_000_000,
  quotaBytes: 10_000_000_000,
  uploadLinkTtlMs: 300_000,
  retentionMs: 7 * 24 * 3_600_000,
  completeWaitMs: 5_000,
  completePollMs: 100,
  verifyRequeueAfterMs: 15 * 60_000,
  uploadLeaseMs: 30_000,
  uploadIdleTimeoutMs: 60_000,
};
