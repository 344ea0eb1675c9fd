import { UploadSha256Header, type FileRecord } from "@meter/contracts";
import { AppError, type Logger } from "@meter/service-kit";
import type { ObjectStore } from "../adapters/object-store";
import { FilesErrors } from "../errors";
import type { Clock } from "../policy";
import type { FileRepository, StoredFile } from "../repositories/file.repository";
import { ByteMeter } from "./byte-meter";
import { discardObject } from "./discard-object";
import { toFileRecord } from "./file-record";
import type { UploadGrant, UploadLinkService } from "./upload-link.service";

export type UploadHeaders = Record<string, string | string[] | undefined>;

export interface UploadServiceDeps {
  files: FileRepository;
  store: ObjectStore;
  links: UploadLinkService;
  clock: Clock;
  logger: Logger;
}

/**
 * PUT to an upload link. Everything that can be refused without reading the body is refused first
 * (link, state, headers); then the bytes stream into the object store, counted and hashed on the way,
 * at the pace the store takes them, so memory stays flat whatever the size.
 */
export class UploadService {
  constructor(private readonly deps: UploadServiceDeps) {}

  async upload(token: string, headers: UploadHeaders, body: AsyncIterable<Buffer>): Promise<FileRecord> {
    const { files, store, links, clock, logger } = this.deps;
    const grant = links.verify(token, clock.now());
    const file = await files.find(grant.fileId);
    refuseUnlessAwaitingUpload(file);
    checkHeaders(grant, headers);
    if (!(await files.claimUpload(file.id, clock.now()))) {
      // Another PUT, a completion, a deletion or the clock got there between the read and the claim.
      refuseUnlessAwaitingUpload(await files.find(file.id));
      throw FilesErrors.uploadLinkExpired();
    }

    const meter = new ByteMeter();
    try {
      await store.put(file.objectKey, meter.measure(body, { limit: grant.sizeBytes, overflow: () => FilesErrors.tooManyBytes(grant.sizeBytes) }), grant.sizeBytes, grant.mimeType);
    } catch (error) {
      // Nothing was kept (a failed put leaves no object): the link may be used again while it lives.
      await files.releaseUpload(file.id);
      if (error instanceof AppError) throw error;
      logger.warn({ err: error, file_id: file.id, received: meter.bytes }, "upload failed");
      throw new AppError("service_unavailable", "the upload could not be stored; try again", { cause: error });
    }

    // The hash is known now: bytes that cannot match the declaration are rejected without waiting for completion.
    const sha256 = meter.digest();
    const rejection =
      sha256 === grant.sha256 ? undefined : { code: "checksum_mismatch" as const, detail: `received bytes hash to ${sha256}` };
    if (!(await files.finishUpload(file.id, clock.now(), rejection))) {
      // Deleted (or expired) while the bytes were streaming: keep nothing.
      await store.remove(file.objectKey);
      throw FilesErrors.invalidUploadLink();
    }
    if (rejection) await discardObject(this.deps, file);
    return toFileRecord({ ...file, status: rejection ? "rejected" : "uploaded", rejectionCode: rejection?.code ?? null });
  }
}

/** A link leads to one upload: refused once the file has moved on, or when it is gone. */
function refuseUnlessAwaitingUpload(file: StoredFile | undefined): asserts file is StoredFile {
  switch (file?.status) {
    case "awaiting_upload":
      return;
    case "uploading":
      throw FilesErrors.uploadInProgress();
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
