import type { Readable } from "node:stream";
import { UploadSha256Header, type FileRecord } from "@meter/contracts";
import { AppError, type Logger } from "@meter/service-kit";
import type { ObjectStore } from "../adapters/object-store";
import { FilesErrors } from "../errors";
import type { Clock } from "../domain/policy";
import type { FileRepository, StoredFile } from "../repositories/file.repository";
import { ByteMeter } from "./byte-meter";
import { discardObject } from "./discard-object";
import { toFileRecord } from "./file-record";
import { refuseUnlessUploadable, type UploadAttempt, type UploadAttemptService } from "./upload-attempt.service";
import type { UploadGrant, UploadLinkService } from "./upload-link.service";

export type UploadHeaders = Record<string, string | string[] | undefined>;

export interface UploadServiceDeps {
  files: FileRepository;
  store: ObjectStore;
  links: UploadLinkService;
  attempts: UploadAttemptService;
  clock: Clock;
  logger: Logger;
}

/**
 * PUT to an upload link. Everything that can be refused without reading the body is refused first
 * (link, state, headers); then the PUT claims the file (taking over one whose previous PUT died, see
 * UploadAttemptService) and the bytes stream into the object store, counted and hashed on the way, at
 * the pace the store takes them, so memory stays flat whatever the size.
 */
export class UploadService {
  constructor(private readonly deps: UploadServiceDeps) {}

  async upload(token: string, headers: UploadHeaders, body: Readable): Promise<FileRecord> {
    const { files, links, attempts, clock } = this.deps;
    const grant = links.verify(token, clock.now());
    const file = await files.find(grant.fileId);
    refuseUnlessUploadable(file);
    checkHeaders(grant, headers);
    const attempt = await attempts.begin(file.id);
    try {
      return await this.receive(file, grant, attempt, body);
    } finally {
      await attempts.end(attempt);
    }
  }

  private async receive(file: StoredFile, grant: UploadGrant, attempt: UploadAttempt, body: Readable): Promise<FileRecord> {
    const { files, store, attempts, clock, logger } = this.deps;
    // A stopped attempt stops reading at once, even from a client that sends nothing more.
    const stop = () => {
      if (!body.readableEnded) body.destroy(attempt.signal.reason as Error);
    };
    attempt.signal.addEventListener("abort", stop, { once: true });
    const meter = new ByteMeter();
    try {
      const bytes = attempt.track(meter.measure(body, { limit: grant.sizeBytes, overflow: () => FilesErrors.tooManyBytes(grant.sizeBytes) }));
      await store.put(attempt.objectKey, bytes, grant.sizeBytes, grant.mimeType);
    } catch (error) {
      // Nothing is kept, and the link may be used again while it lives.
      await attempts.abandon(attempt);
      if (error instanceof AppError) throw error;
      const why = attempt.signal.aborted ? { stopped: (attempt.signal.reason as Error).message } : {};
      logger.warn({ err: error, file_id: file.id, received: meter.bytes, ...why }, "upload failed");
      throw new AppError("service_unavailable", "the upload could not be stored; try again", { cause: error });
    } finally {
      attempt.signal.removeEventListener("abort", stop);
    }

    // The hash is known now: bytes that cannot match the declaration are rejected without waiting for completion.
    const sha256 = meter.digest();
    const rejection = sha256 === grant.sha256 ? undefined : { code: "checksum_mismatch" as const, detail: `received bytes hash to ${sha256}` };
    if (!(await files.finishUpload(file.id, attempt.id, clock.now(), rejection))) {
      // Deleted or expired while the bytes streamed, or given up as dead: keep nothing.
      await store.remove(attempt.objectKey).catch((error: unknown) => {
        logger.warn({ err: error, file_id: file.id, attempt_id: attempt.id }, "could not delete the object of an upload that lost its file");
      });
      const now = await files.find(file.id);
      if (now?.status === "uploading") throw FilesErrors.uploadInProgress();
      throw FilesErrors.invalidUploadLink();
    }
    if (rejection) await discardObject(this.deps, { id: file.id, objectKey: attempt.objectKey });
    return toFileRecord({ ...file, status: rejection ? "rejected" : "uploaded", rejectionCode: rejection?.code ?? null });
  }
}

/** The PUT must carry the headers the link was issued with, with exactly the bound values. */
function checkHeaders(grant: UploadGrant, headers: UploadHeaders): void {
  const length = single(headers["content-length"]);
  if (length === undefined) throw FilesErrors.invalidUploadHeaders("Content-Length is missing");
  if (!/^\d+$/.test(length)) throw FilesErrors.invalidUploadHeaders("Content-Length is not a byte count");
  const declared = Number(length);
  if (declared > grant.sizeBytes) throw FilesErrors.tooManyBytes(grant.sizeBytes);
  if (declared !== grant.sizeBytes) throw FilesErrors.invalidUploadHeaders(`Content-Length must be ${grant.sizeBytes}`);
  const type = single(headers["content-type"]);
  if (type === undefined) throw FilesErrors.invalidUploadHeaders("Content-Type is missing");
  if (type.trim().toLowerCase() !== grant.mimeType) throw FilesErrors.invalidUploadHeaders(`Content-Type must be ${grant.mimeType}`);
  const sha256 = single(headers[UploadSha256Header]);
  if (sha256 === undefined) throw FilesErrors.invalidUploadHeaders(`${UploadSha256Header} is missing`);
  if (sha256.trim().toLowerCase() !== grant.sha256) throw FilesErrors.invalidUploadHeaders(`${UploadSha256Header} must be the declared SHA-256`);
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? (value.length === 1 ? value[0] : undefined) : value;
}
