import { writeOutboxMessage } from "@meter/messaging";
import type { Db } from "../db";
import { Prisma, type File as FileRow, type FilePurpose, type FileStatus, type RejectionCode } from "../generated/prisma/client";

/** A file as the rules see it (sizes as numbers: they are bounded by MAX_FILE_BYTES). */
export interface StoredFile {
  id: string;
  userId: string;
  organizationId: string;
  purpose: FilePurpose;
  jobId: string | null;
  filename: string;
  mimeType: string;
  sizeBytes: number;
  sha256: string;
  status: FileStatus;
  rejectionCode: RejectionCode | null;
  objectKey: string;
  createdAt: Date;
  uploadExpiresAt: Date | null;
  expiresAt: Date;
}

export interface NewFile {
  id: string;
  userId: string;
  organizationId: string;
  filename: string;
  mimeType: string;
  sizeBytes: number;
  sha256: string;
  objectKey: string;
  createdAt: Date;
  expiresAt: Date;
}

export type Verdict = { status: "verified" } | { status: "rejected"; code: RejectionCode; detail: string };

export interface ListCursor {
  createdAt: Date;
  id: string;
}

/** A user's live uploads: an unused link counts only while it lives; job results never count. */
const USED_QUOTA_SQL = `
  SELECT COALESCE(SUM(size_bytes), 0)::bigint AS used
  FROM files
  WHERE user_id = $1::uuid AND purpose = 'upload' AND expires_at > $2
    AND (status IN ('uploading', 'uploaded', 'verifying', 'verified')
         OR (status = 'awaiting_upload' AND upload_expires_at > $2))`;

/**
 * One statement, so any number of sweepers (one per replica) share the work: rows another sweeper has
 * locked are skipped, and each row is expired once.
 */
const EXPIRE_DUE_SQL = `
  UPDATE files SET status = 'expired', removed_at = $1
  WHERE id IN (
    SELECT id FROM files
    WHERE status NOT IN ('deleted', 'expired')
      AND (expires_at <= $1
           OR (status = 'awaiting_upload' AND upload_expires_at <= $1)
           OR (status = 'uploading' AND upload_started_at <= $2))
    ORDER BY expires_at
    LIMIT $3
    FOR UPDATE SKIP LOCKED)
  RETURNING id::text AS id`;

const CLAIM_PURGE_SQL = `
  SELECT id::text AS id, object_key FROM files
  WHERE status IN ('rejected', 'deleted', 'expired') AND object_purged_at IS NULL
  ORDER BY id
  LIMIT $1
  FOR UPDATE SKIP LOCKED`;

const CLAIM_STALE_VERIFICATIONS_SQL = `
  SELECT id::text AS id FROM files
  WHERE status = 'verifying' AND verification_requested_at <= $1
  ORDER BY verification_requested_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED`;

const TX = { maxWait: 10_000, timeout: 30_000 };

/** Persistence of files and of the verification messages that go with their state changes. */
export class FileRepository {
  constructor(private readonly db: Db) {}

  /**
   * Inserts the upload if the user's live uploads plus this one stay within the quota; undefined if not.
   * A per-user transaction lock makes the check and the insert one step, so concurrent creates of one
   * user queue here and can never overrun the quota together.
   */
  async createUploadWithinQuota(file: NewFile, uploadExpiresAt: Date, quotaBytes: number): Promise<StoredFile | undefined> {
    return this.db.$transaction(async (tx) => {
      await tx.$executeRawUnsafe("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", `files.quota:${file.userId}`);
      const [row] = await tx.$queryRawUnsafe<{ used: bigint }[]>(USED_QUOTA_SQL, file.userId, file.createdAt);
      if (Number(row?.used ?? 0n) + file.sizeBytes > quotaBytes) return undefined;
      const created = await tx.file.create({
        data: { ...file, sizeBytes: BigInt(file.sizeBytes), purpose: "upload", status: "awaiting_upload", uploadExpiresAt },
      });
      return toStoredFile(created);
    }, TX);
  }

  /** A job's result, stored verified; when the job already has one, that one (and `created: false`). */
  async createJobResult(file: NewFile, jobId: string, now: Date): Promise<{ file: StoredFile; created: boolean }> {
    const { count } = await this.db.file.createMany({
      data: [{ ...file, sizeBytes: BigInt(file.sizeBytes), purpose: "job_result", jobId, status: "verified", verifiedAt: now }],
      skipDuplicates: true,
    });
    const row = await this.db.file.findUniqueOrThrow({ where: { jobId } });
    return { file: toStoredFile(row), created: count === 1 };
  }

  async find(id: string): Promise<StoredFile | undefined> {
    const row = await this.db.file.findUnique({ where: { id } });
    return row ? toStoredFile(row) : undefined;
  }

  async findByJobId(jobId: string): Promise<StoredFile | undefined> {
    const row = await this.db.file.findUnique({ where: { jobId } });
    return row ? toStoredFile(row) : undefined;
  }

  /** The user's file if it is still there for them: not deleted, not expired, link not died unused. */
  async findVisible(id: string, userId: string, now: Date): Promise<StoredFile | undefined> {
    const row = await this.db.file.findFirst({ where: { id, userId, ...visible(now) } });
    return row ? toStoredFile(row) : undefined;
  }

  /** Newest first; `limit + 1` rows are read so the caller knows whether there are more. */
  async listVisible(userId: string, now: Date, after: ListCursor | undefined, limit: number): Promise<StoredFile[]> {
    const rows = await this.db.file.findMany({
      where: {
        userId,
        AND: [
          visible(now),
          after ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] } : {},
        ],
      },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: limit + 1,
    });
    return rows.map(toStoredFile);
  }

  /** awaiting_upload -> uploading, while the link lives; false if another upload got there first. */
  async claimUpload(id: string, now: Date): Promise<boolean> {
    const { count } = await this.db.file.updateMany({
      where: { id, status: "awaiting_upload", uploadExpiresAt: { gt: now }, expiresAt: { gt: now } },
      data: { status: "uploading", uploadStartedAt: now },
    });
    return count === 1;
  }

  /** uploading -> awaiting_upload after a failed PUT, so the link can be used again while it lives. */
  async releaseUpload(id: string): Promise<void> {
    await this.db.file.updateMany({ where: { id, status: "uploading" }, data: { status: "awaiting_upload", uploadStartedAt: null } });
  }

  /**
   * uploading -> uploaded, or straight to rejected when the bytes received already prove the file wrong.
   * False if the file was deleted or expired meanwhile.
   */
  async finishUpload(id: string, now: Date, rejection?: { code: RejectionCode; detail: string }): Promise<boolean> {
    const data: Prisma.FileUpdateManyMutationInput = rejection
      ? { status: "rejected", uploadedAt: now, rejectedAt: now, rejectionCode: rejection.code, rejectionDetail: rejection.detail }
      : { status: "uploaded", uploadedAt: now };
    const { count } = await this.db.file.updateMany({ where: { id, status: "uploading" }, data });
    return count === 1;
  }

  /**
   * -> verifying, with the message for the worker in the same transaction (the outbox relay publishes it
   * after the commit). False if the file is not the user's or not in a state that can be completed.
   */
  async requestVerification(id: string, userId: string, now: Date): Promise<boolean> {
    return this.db.$transaction(async (tx) => {
      const { count } = await tx.file.updateMany({
        where: { id, userId, status: { in: ["awaiting_upload", "uploaded"] }, ...visible(now) },
        data: { status: "verifying", verificationRequestedAt: now },
      });
      if (count === 1) await writeOutboxMessage(tx, "files.upload.completed", { version: "v1", file_id: id });
      return count === 1;
    }, TX);
  }

  /** verifying -> verified | rejected; false if the file left `verifying` meanwhile (deleted, expired, or a duplicate got there first). */
  async finishVerification(id: string, verdict: Verdict, now: Date): Promise<boolean> {
    const data: Prisma.FileUpdateManyMutationInput =
      verdict.status === "verified"
        ? { status: "verified", verifiedAt: now }
        : { status: "rejected", rejectedAt: now, rejectionCode: verdict.code, rejectionDetail: verdict.detail };
    const { count } = await this.db.file.updateMany({ where: { id, status: "verifying" }, data });
    return count === 1;
  }

  /** Any visible state -> deleted; the quota is freed by the state itself. */
  async markDeleted(id: string, userId: string, now: Date): Promise<StoredFile | undefined> {
    const { count } = await this.db.file.updateMany({ where: { id, userId, ...visible(now) }, data: { status: "deleted", removedAt: now } });
    return count === 1 ? this.find(id) : undefined;
  }

  async markObjectPurged(id: string, now: Date): Promise<void> {
    await this.db.file.updateMany({ where: { id, objectPurgedAt: null }, data: { objectPurgedAt: now } });
  }

  /** Expires what is due: retention over, upload link died unused, or an upload abandoned mid-stream. */
  async expireDue(now: Date, uploadStartedBefore: Date, limit: number): Promise<string[]> {
    const rows = await this.db.$queryRawUnsafe<{ id: string }[]>(EXPIRE_DUE_SQL, now, uploadStartedBefore, limit);
    return rows.map((r) => r.id);
  }

  /**
   * Claims up to `limit` objects of finished files, deletes each with `remove` and marks it purged, in
   * one transaction; other sweepers skip the claimed rows. Returns how many were purged.
   */
  async purgeObjects(limit: number, now: Date, remove: (objectKey: string) => Promise<void>): Promise<number> {
    return this.db.$transaction(
      async (tx) => {
        const rows = await tx.$queryRawUnsafe<{ id: string; object_key: string }[]>(CLAIM_PURGE_SQL, limit);
        for (const row of rows) await remove(row.object_key);
        if (rows.length > 0) {
          await tx.file.updateMany({ where: { id: { in: rows.map((r) => r.id) } }, data: { objectPurgedAt: now } });
        }
        return rows.length;
      },
      { maxWait: TX.maxWait, timeout: 120_000 },
    );
  }

  /** Sends files stuck `verifying` since `requestedBefore` to the worker again. Returns how many. */
  async requeueStaleVerifications(requestedBefore: Date, now: Date, limit: number): Promise<number> {
    return this.db.$transaction(async (tx) => {
      const rows = await tx.$queryRawUnsafe<{ id: string }[]>(CLAIM_STALE_VERIFICATIONS_SQL, requestedBefore, limit);
      for (const { id } of rows) await writeOutboxMessage(tx, "files.upload.completed", { version: "v1", file_id: id });
      if (rows.length > 0) {
        await tx.file.updateMany({ where: { id: { in: rows.map((r) => r.id) } }, data: { verificationRequestedAt: now } });
      }
      return rows.length;
    }, TX);
  }
}

/** What the API still shows: not deleted or expired, within retention, and not an upload link that died unused. */
function visible(now: Date): Prisma.FileWhereInput {
  return {
    status: { notIn: ["deleted", "expired"] },
    expiresAt: { gt: now },
    NOT: { status: "awaiting_upload", uploadExpiresAt: { lte: now } },
  };
}

function toStoredFile(row: FileRow): StoredFile {
  return {
    id: row.id,
    userId: row.userId,
    organizationId: row.organizationId,
    purpose: row.purpose,
    jobId: row.jobId,
    filename: row.filename,
    mimeType: row.mimeType,
    sizeBytes: Number(row.sizeBytes),
    sha256: row.sha256,
    status: row.status,
    rejectionCode: row.rejectionCode,
    objectKey: row.objectKey,
    createdAt: row.createdAt,
    uploadExpiresAt: row.uploadExpiresAt,
    expiresAt: row.expiresAt,
  };
}
