import { randomUUID } from "node:crypto";
import { ResultMimeType, type FileRecord, type Scope } from "@meter/contracts";
import { AppError, type Logger } from "@meter/service-kit";
import type { ObjectStore } from "../adapters/object-store";
import { FilesErrors } from "../errors";
import type { Clock, FilesPolicy } from "../domain/policy";
import type { FileRepository, StoredFile } from "../repositories/file.repository";
import { ByteMeter } from "./byte-meter";
import { toFileRecord } from "./file-record";
import type { FileOwner } from "./file.service";

export interface JobResultServiceDeps {
  files: FileRepository;
  store: ObjectStore;
  policy: FilesPolicy;
  clock: Clock;
  logger: Logger;
}

export interface StoreJobResult {
  jobId: string;
  owner: FileOwner;
  filename: string;
  /** The job's operation scope (null from a media-jobs older than this rule: `files:read` only). */
  readScope: Scope | null;
  /** The Content-Type as sent; parameters (e.g. charset) are dropped. */
  contentType: string;
  sizeBytes: number;
  body: AsyncIterable<Buffer>;
}

/**
 * A media job's one result, stored for the job's user and downloadable at once. Our own output is not
 * sent through verification: it is stored `verified`, with the size and SHA-256 measured while storing.
 * Results do not count against the user's quota: a job already paid for must be able to deliver, and
 * results expire after 7 days like every file. Storing is idempotent per job.
 */
export class JobResultService {
  constructor(private readonly deps: JobResultServiceDeps) {}

  async store(input: StoreJobResult): Promise<{ file: FileRecord; created: boolean }> {
    const { files, store, policy, clock } = this.deps;
    const mimeType = ResultMimeType.safeParse(input.contentType.split(";")[0]?.trim().toLowerCase());
    if (!mimeType.success) throw FilesErrors.unsupportedResultType(input.contentType);
    if (!Number.isInteger(input.sizeBytes) || input.sizeBytes < 1 || input.sizeBytes > policy.maxFileBytes) {
      throw FilesErrors.resultLengthRequired();
    }
    const existing = await files.findByJobId(input.jobId);
    if (existing) return { file: renderExisting(existing), created: false };

    const id = randomUUID();
    const objectKey = `results/${id}`;
    const meter = new ByteMeter();
    try {
      await store.put(
        objectKey,
        meter.measure(input.body, { limit: input.sizeBytes, overflow: () => FilesErrors.tooManyBytes(input.sizeBytes) }),
        input.sizeBytes,
        mimeType.data,
      );
    } catch (error) {
      if (error instanceof AppError) throw error;
      this.deps.logger.warn({ err: error, job_id: input.jobId, received: meter.bytes }, "storing a job result failed");
      throw new AppError("service_unavailable", "the result could not be stored; try again", { cause: error });
    }
    const now = clock.now();
    const { file, created } = await files.createJobResult(
      {
        id,
        userId: input.owner.userId,
        organizationId: input.owner.organizationId,
        filename: input.filename,
        mimeType: mimeType.data,
        sizeBytes: input.sizeBytes,
        sha256: meter.digest(),
        objectKey,
        createdAt: now,
        expiresAt: new Date(now.getTime() + policy.retentionMs),
      },
      input.jobId,
      input.readScope,
      now,
    );
    // A concurrent store for the same job won: ours is a duplicate nobody will reference.
    if (!created) await store.remove(objectKey);
    return { file: renderExisting(file), created };
  }
}

/** The job's result as stored before; a repeat after the user deleted it (or it expired) cannot bring it back. */
function renderExisting(file: StoredFile): FileRecord {
  if (file.status === "deleted" || file.status === "expired") throw FilesErrors.jobResultGone(file.jobId ?? "");
  return toFileRecord(file);
}
