import { writeOutboxMessage } from "@meter/messaging";
import type { Db } from "../db";
import type { Prisma, File as FileRow, FilePurpose, FileStatus, RejectionCode } from "../generated/prisma/client";

/** A file as the rules see it (sizes as numbers: they are bounded by MAX_FILE_BYTES). */
export interface StoredFile {
  id: string;
  userId: string;
  organizationId: string;
  purpose: FilePurpose;
  jobId: string | null;
  /** A job result's reading right (the job's operation scope); null for uploads. */
  readScope: string | null;
  filename: string;
  mimeType: string;
  sizeBytes: number;
  sha256: string;
  status: FileStatus;
  rejectionCode: RejectionCode | null;
  objectKey: string;
  createdAt: Date;
  uploadExpiresAt: Date | null;
  /** The PUT streaming the bytes while `uploading`; null otherwise, and on rows an older version claimed. */
  uploadAttemptId: string | null;
  expiresAt: Date;
}

/** A PUT's claim on a file: its attempt, the object it writes, the process running it and its lease. */
export interface UploadClaim {
  attemptId: string;
  objectKey: string;
  streamer: string;
  now: Date;
  leaseExpiresAt: Date;
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

/**
 * A user's uploads that can still complete: anything uploaded; a link still alive (unused, or its PUT
 * interrupted and retryable); a PUT still streaming (its lease renewed) past its link's death. Job
 * results never count.
 */
const USED_QUOTA_SQL = `
  SELECT COALESCE(SUM(size_bytes), 0)::bigint AS used
  FROM files
  WHERE user_id = $1::uuid AND purpose = 'upload' AND expires_at > $2
    AND (status IN ('uploaded', 'verifying', 'verified')
         OR (status IN ('awaiting_upload', 'uploading') AND upload_expires_at > $2)
         OR (status = 'uploading' AND upload_lease_expires_at > $2))`;

/**
 * The retention sweeper's statements, each served by a partial index of the migrations that leaves
 * out finished rows (test/sweep-plans.test.ts checks the plans). Each takes a bounded chunk with
 * FOR UPDATE SKIP LOCKED, so any number of sweepers (one per replica) share the work and every row
 * is handled once. Exported for that test.
 */
export const SweepSql = {
  /** Retention over ($1 now, $2 limit): files_live_expires_at_idx. */
  expireRetention: `
    UPDATE files SET status = 'expired', removed_at = $1
    WHERE id IN (
      SELECT id FROM files
      WHERE status NOT IN ('deleted', 'expired') AND expires_at <= $1
      ORDER BY expires_at
      LIMIT $2
      FOR UPDATE SKIP LOCKED)
    RETURNING id::text AS id`,
  /**
   * Uploads that can no longer complete ($1 now, $2 limit): the link died unused, or died with nobody
   * streaming (lease lapsed, or none: claimed by an older version): files_open_uploads_idx.
   */
  expireDeadUploads: `
    UPDATE files SET status = 'expired', removed_at = $1
    WHERE id IN (
      SELECT id FROM files
      WHERE status IN ('awaiting_upload', 'uploading') AND upload_expires_at <= $1
        AND (status = 'awaiting_upload' OR upload_lease_expires_at IS NULL OR upload_lease_expires_at <= $1)
      ORDER BY upload_expires_at
      LIMIT $2
      FOR UPDATE SKIP LOCKED)
    RETURNING id::text AS id`,
  /** Objects still to delete ($1 limit): files_objects_to_purge_idx, read in its order (files.id, not the text alias). */
  claimPurge: `
    SELECT id::text AS id, object_key FROM files
    WHERE status IN ('rejected', 'deleted', 'expired') AND object_purged_at IS NULL
    ORDER BY files.id
    LIMIT $1
    FOR UPDATE SKIP LOCKED`,
  /** Verifications to send again ($1 requested before, $2 limit): files_verifying_idx. */
  claimStaleVerifications: `
    SELECT id::text AS id FROM files
    WHERE status = 'verifying' AND verification_requested_at <= $1
    ORDER BY verification_requested_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED`,
} as const;

/** Renews the leases of the attempts still streaming ($1 file ids, $2 their attempts, $3 new expiry); returns those still theirs. */
const RENEW_LEASES_SQL = `
  UPDATE files f SET upload_lease_expires_at = $3
  FROM unnest($1::uuid[], $2::uuid[]) AS a(id, attempt_id)
  WHERE f.id = a.id AND f.status = 'uploading' AND f.upload_attempt_id = a.attempt_id
  RETURNING f.upload_attempt_id::text AS attempt_id`;

/** What leaving `uploading` clears: the attempt's fields describe only a PUT under way. */
const NO_ATTEMPT = { uploadAttemptId: null, uploadStreamer: null, uploadLeaseExpiresAt: null } as const;

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
  async createJobResult(file: NewFile, jobId: string, readScope: string | null, now: Date): Promise<{ file: StoredFile; created: boolean }> {
    const { count } = await this.db.file.createMany({
      data: [{ ...file, sizeBytes: BigInt(file.sizeBytes), purpose: "job_result", jobId, readScope, status: "verified", verifiedAt: now }],
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
        AND: [visible(now), after ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] } : {}],
      },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: limit + 1,
    });
    return rows.map(toStoredFile);
  }

  /**
   * -> uploading under `claim`, while the link lives, if the file is still as the caller saw it:
   * `awaiting_upload`, or `uploading` under `previousAttemptId` (an attempt whose streamer is gone).
   * False if anything changed meanwhile.
   */
  async claimUpload(id: string, from: Pick<StoredFile, "status" | "uploadAttemptId">, claim: UploadClaim): Promise<boolean> {
    const { count } = await this.db.file.updateMany({
      where: {
        id,
        status: from.status,
        uploadAttemptId: from.uploadAttemptId,
        uploadExpiresAt: { gt: claim.now },
        expiresAt: { gt: claim.now },
      },
      data: {
        status: "uploading",
        uploadStartedAt: claim.now,
        uploadAttemptId: claim.attemptId,
        uploadStreamer: claim.streamer,
        uploadLeaseExpiresAt: claim.leaseExpiresAt,
        objectKey: claim.objectKey,
      },
    });
    return count === 1;
  }

  /** Extends the leases of attempts this process is streaming; returns the attempt ids that are still theirs. */
  async renewUploadLeases(attempts: { fileId: string; attemptId: string }[], leaseExpiresAt: Date): Promise<Set<string>> {
    const rows = await this.db.$queryRawUnsafe<{ attempt_id: string }[]>(
      RENEW_LEASES_SQL,
      attempts.map((a) => a.fileId),
      attempts.map((a) => a.attemptId),
      leaseExpiresAt,
    );
    return new Set(rows.map((r) => r.attempt_id));
  }

  /**
   * uploading -> awaiting_upload once the attempt's object is gone, so the link can be used again while
   * it lives; a no-op if the attempt no longer owns the file.
   */
  async releaseUpload(id: string, attemptId: string): Promise<boolean> {
    const { count } = await this.db.file.updateMany({
      where: { id, status: "uploading", uploadAttemptId: attemptId },
      data: { status: "awaiting_upload", uploadStartedAt: null, ...NO_ATTEMPT },
    });
    return count === 1;
  }

  /**
   * uploading -> uploaded, or straight to rejected when the bytes received already prove the file wrong.
   * False if the attempt no longer owns the file (deleted or expired meanwhile, or given up as dead).
   */
  async finishUpload(id: string, attemptId: string, now: Date, rejection?: { code: RejectionCode; detail: string }): Promise<boolean> {
    const data: Prisma.FileUpdateManyMutationInput = rejection
      ? { status: "rejected", uploadedAt: now, rejectedAt: now, rejectionCode: rejection.code, rejectionDetail: rejection.detail, ...NO_ATTEMPT }
      : { status: "uploaded", uploadedAt: now, ...NO_ATTEMPT };
    const { count } = await this.db.file.updateMany({ where: { id, status: "uploading", uploadAttemptId: attemptId }, data });
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

  /** Expires up to `limit` files whose retention is over. */
  async expireRetentionDue(now: Date, limit: number): Promise<string[]> {
    const rows = await this.db.$queryRawUnsafe<{ id: string }[]>(SweepSql.expireRetention, now, limit);
    return rows.map((r) => r.id);
  }

  /** Expires up to `limit` uploads that can no longer complete: link dead, and nobody streaming. */
  async expireDeadUploads(now: Date, limit: number): Promise<string[]> {
    const rows = await this.db.$queryRawUnsafe<{ id: string }[]>(SweepSql.expireDeadUploads, now, limit);
    return rows.map((r) => r.id);
  }

  /**
   * Claims up to `limit` objects of finished files, deletes each with `remove` and marks it purged, in
   * one transaction; other sweepers skip the claimed rows. Returns how many were purged.
   */
  async purgeObjects(limit: number, now: Date, remove: (objectKey: string) => Promise<void>): Promise<number> {
    return this.db.$transaction(
      async (tx) => {
        const rows = await tx.$queryRawUnsafe<{ id: string; object_key: string }[]>(SweepSql.claimPurge, limit);
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
      const rows = await tx.$queryRawUnsafe<{ id: string }[]>(SweepSql.claimStaleVerifications, requestedBefore, limit);
      for (const { id } of rows) await writeOutboxMessage(tx, "files.upload.completed", { version: "v1", file_id: id });
      if (rows.length > 0) {
        await tx.file.updateMany({ where: { id: { in: rows.map((r) => r.id) } }, data: { verificationRequestedAt: now } });
      }
      return rows.length;
    }, TX);
  }
}

/**
 * What the API still shows: not deleted or expired, within retention, and not an upload that can no
 * longer complete (its link died unused, or died with nobody streaming: the same rule as the quota's).
 */
function visible(now: Date): Prisma.FileWhereInput {
  return {
    status: { notIn: ["deleted", "expired"] },
    expiresAt: { gt: now },
    NOT: [
      { status: "awaiting_upload", uploadExpiresAt: { lte: now } },
      { status: "uploading", uploadExpiresAt: { lte: now }, OR: [{ uploadLeaseExpiresAt: null }, { uploadLeaseExpiresAt: { lte: now } }] },
    ],
  };
}

function toStoredFile(row: FileRow): StoredFile {
  return {
    id: row.id,
    userId: row.userId,
    organizationId: row.organizationId,
    purpose: row.purpose,
    jobId: row.jobId,
    readScope: row.readScope,
    filename: row.filename,
    mimeType: row.mimeType,
    sizeBytes: Number(row.sizeBytes),
    sha256: row.sha256,
    status: row.status,
    rejectionCode: row.rejectionCode,
    objectKey: row.objectKey,
    createdAt: row.createdAt,
    uploadExpiresAt: row.uploadExpiresAt,
    uploadAttemptId: row.uploadAttemptId,
    expiresAt: row.expiresAt,
  };
}
