import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import { UploadMimeType, type CreateFileRequest, type FileDeleted, type FileList, type FileRecord, type Scope } from "@meter/contracts";
import type { Logger } from "@meter/service-kit";
import type { ObjectStore } from "../adapters/object-store";
import { FilesErrors } from "../errors";
import type { Clock, FilesPolicy } from "../domain/policy";
import type { FileRepository, ListCursor, StoredFile } from "../repositories/file.repository";
import { discardObject } from "./discard-object";
import { toFileRecord } from "./file-record";
import type { UploadLinkService } from "./upload-link.service";

export interface FileOwner {
  userId: string;
  organizationId: string;
}

export interface FileContent {
  file: StoredFile;
  body: Readable;
}

export interface FileServiceDeps {
  files: FileRepository;
  store: ObjectStore;
  links: UploadLinkService;
  policy: FilesPolicy;
  clock: Clock;
  logger: Logger;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A user's files: create (within the quota), read, list, download, delete. Users only ever see their
 * own. File ids arrive checked to be UUIDs (the routes answer 404 for anything else).
 */
export class FileService {
  constructor(private readonly deps: FileServiceDeps) {}

  async create(owner: FileOwner, input: CreateFileRequest, publicBaseUrl: string): Promise<FileRecord> {
    const { files, links, policy, clock } = this.deps;
    const mimeType = UploadMimeType.safeParse(input.mime_type);
    if (!mimeType.success) throw FilesErrors.typeNotAccepted(input.mime_type);
    if (input.size_bytes > policy.maxFileBytes) throw FilesErrors.fileTooLarge(policy.maxFileBytes);
    const now = clock.now();
    const id = randomUUID();
    const uploadExpiresAt = new Date(now.getTime() + policy.uploadLinkTtlMs);
    const file = await files.createUploadWithinQuota(
      {
        id,
        userId: owner.userId,
        organizationId: owner.organizationId,
        filename: input.filename,
        mimeType: mimeType.data,
        sizeBytes: input.size_bytes,
        sha256: input.sha256,
        objectKey: `uploads/${id}`,
        createdAt: now,
        expiresAt: new Date(now.getTime() + policy.retentionMs),
      },
      uploadExpiresAt,
      policy.quotaBytes,
    );
    if (!file) throw FilesErrors.quotaExceeded(policy.quotaBytes);
    const grant = { fileId: id, sizeBytes: input.size_bytes, mimeType: mimeType.data, sha256: input.sha256, expiresAt: uploadExpiresAt };
    return toFileRecord(file, links.instructions(grant, publicBaseUrl));
  }

  async get(userId: string, id: string): Promise<FileRecord> {
    return toFileRecord(await this.visible(userId, id));
  }

  async list(userId: string, opts: { limit: number; cursor?: string | undefined }): Promise<FileList> {
    const after = opts.cursor === undefined ? undefined : decodeCursor(opts.cursor);
    const rows = await this.deps.files.listVisible(userId, this.deps.clock.now(), after, opts.limit);
    const page = rows.slice(0, opts.limit);
    const last = page.at(-1);
    const hasMore = rows.length > opts.limit;
    return {
      object: "list",
      data: page.map((f) => toFileRecord(f)),
      has_more: hasMore,
      next_cursor: hasMore && last ? encodeCursor({ createdAt: last.createdAt, id: last.id }) : null,
    };
  }

  /** The user's file, if it is verified (a job result is stored verified): what a job may use as input. */
  async getVerified(userId: string, id: string): Promise<FileRecord> {
    return toFileRecord(await this.verified(userId, id));
  }

  /** The bytes of a verified file of the user's, streamed from the object store. */
  async openContent(userId: string, id: string): Promise<FileContent> {
    const file = await this.verified(userId, id);
    return { file, body: await this.deps.store.read(file.objectKey) };
  }

  /**
   * The bytes for an API key: `files:read` or `files:write` reads any of the user's files; a job's
   * result is also readable by any key holding the job's own scope (docs/api.md "Files").
   */
  async openContentForKey(userId: string, scopes: readonly Scope[], id: string): Promise<FileContent> {
    const file = await this.visible(userId, id);
    const byJob = file.readScope !== null && scopes.some((s) => s === file.readScope);
    if (!byJob && !scopes.includes("files:read") && !scopes.includes("files:write")) throw FilesErrors.contentNeedsScope(file);
    if (file.status !== "verified") throw FilesErrors.fileNotVerified(id, file.status);
    return { file, body: await this.deps.store.read(file.objectKey) };
  }

  /**
   * Deletes the file at once (it disappears and its quota is freed in the same statement), then its
   * object; if that fails the retention sweeper deletes the object later.
   */
  async delete(userId: string, id: string): Promise<FileDeleted> {
    const file = await this.deps.files.markDeleted(id, userId, this.deps.clock.now());
    if (!file) throw FilesErrors.fileNotFound(id);
    await discardObject(this.deps, file);
    return { id: file.id, object: "file", deleted: true };
  }

  private async visible(userId: string, id: string): Promise<StoredFile> {
    const file = await this.deps.files.findVisible(id, userId, this.deps.clock.now());
    if (!file) throw FilesErrors.fileNotFound(id);
    return file;
  }

  private async verified(userId: string, id: string): Promise<StoredFile> {
    const file = await this.visible(userId, id);
    if (file.status !== "verified") throw FilesErrors.fileNotVerified(id, file.status);
    return file;
  }
}

/** Opaque to clients: the position after the last file of a page, in the list's order. */
function encodeCursor(c: ListCursor): string {
  return Buffer.from(`${c.createdAt.toISOString()}|${c.id}`).toString("base64url");
}

function decodeCursor(cursor: string): ListCursor {
  const [at, id, ...rest] = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  const createdAt = new Date(at ?? "");
  if (rest.length > 0 || !id || !UUID.test(id) || Number.isNaN(createdAt.getTime())) throw FilesErrors.invalidCursor();
  return { createdAt, id };
}
