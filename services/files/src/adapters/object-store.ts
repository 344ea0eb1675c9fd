import type { Readable } from "node:stream";

/** Where file content lives (S3 / MinIO in production, s3rver locally). */
export interface ObjectStore {
  /**
   * Stores exactly `size` bytes read from `body` under `key`. Memory stays bounded whatever the size.
   * If `body` throws, ends early or runs long, the call rejects and nothing is left under `key`.
   */
  put(key: string, body: AsyncIterable<Buffer>, size: number, contentType: string): Promise<void>;
  /** The stored size, or undefined when there is no such object. */
  stat(key: string): Promise<{ size: number } | undefined>;
  /** The object's bytes as a stream; ObjectNotFoundError when there is none. */
  read(key: string): Promise<Readable>;
  /** Deletes the object; deleting one that is not there succeeds. */
  remove(key: string): Promise<void>;
  /** Throws unless the store answers and the bucket exists (readiness). */
  check(): Promise<void>;
}

export class ObjectNotFoundError extends Error {
  constructor(readonly key: string) {
    super(`no object ${key}`);
    this.name = "ObjectNotFoundError";
  }
}

/** The body did not have the size the caller promised. */
export class ObjectSizeMismatchError extends Error {
  constructor(
    readonly expected: number,
    readonly actual: string,
  ) {
    super(`expected ${expected} bytes, got ${actual}`);
    this.name = "ObjectSizeMismatchError";
  }
}
