/**
 * Who is streaming a file right now, known across every files process at once. A lock lives exactly
 * as long as the process that holds it: when the process dies, whatever the way, its locks are free
 * at once, which is how a retried PUT knows the upload it finds `uploading` has nobody behind it.
 */
export interface UploadLocks {
  /** Takes the file's lock; undefined when any process (this one included) holds it. */
  tryAcquire(fileId: string): Promise<UploadLock | undefined>;
  /** Frees every lock and closes the connection behind them. */
  close(): Promise<void>;
}

export interface UploadLock {
  /** Aborted when the lock is lost without release() (its session died): the holder must stop. */
  readonly lost: AbortSignal;
  release(): Promise<void>;
}
