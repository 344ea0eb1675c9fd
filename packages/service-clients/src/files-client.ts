import type { Readable } from "node:stream";
import { FilesEndpoints, pathOf, type FileRecord, type Scope } from "@meter/contracts";
import type { InternalClient } from "@meter/service-kit";

export interface JobResultUpload {
  jobId: string;
  userId: string;
  organizationId: string;
  filename: string;
  /** A ResultMimeType. */
  contentType: string;
  sizeBytes: number;
  body: Readable | Buffer;
  /** The job's operation scope, which lets the keys that may read the job download its result (without it: `files:read` only). */
  readScope?: Scope;
}

/**
 * The files service's internal API, with bodies streamed both ways. Errors come back as
 * InternalHttpError carrying the contract code (`file_not_found`, `file_not_verified`, ...), which a
 * job can pass on to its caller as it is.
 */
export class FilesClient {
  constructor(
    private readonly client: InternalClient,
    private readonly timeoutMs = 60_000,
  ) {}

  /** The file if it is the user's and verified (job results count as verified). */
  verifiedFile(userId: string, fileId: string): Promise<FileRecord> {
    return this.client.send(FilesEndpoints.verifiedFile, { params: { id: fileId }, query: { user_id: userId } }, { timeoutMs: this.timeoutMs });
  }

  /** An input file's bytes, under the same rule; consume or destroy the stream. */
  async readFile(userId: string, fileId: string): Promise<{ mimeType: string; sizeBytes: number; body: Readable }> {
    const path = pathOf(FilesEndpoints.content, { id: fileId }, { user_id: userId });
    const res = await this.client.stream("GET", path, undefined, { timeoutMs: this.timeoutMs });
    return { mimeType: String(res.headers["content-type"]), sizeBytes: Number(res.headers["content-length"]), body: res.body };
  }

  /** Stores the job's result for the job's user; a repeat for the same job returns the first result. */
  async storeJobResult(upload: JobResultUpload): Promise<{ file: FileRecord; created: boolean }> {
    const query = { user_id: upload.userId, organization_id: upload.organizationId, filename: upload.filename };
    const path = pathOf(FilesEndpoints.storeJobResult, { jobId: upload.jobId }, upload.readScope ? { ...query, read_scope: upload.readScope } : query);
    const res = await this.client.stream("PUT", path, upload.body, {
      timeoutMs: this.timeoutMs,
      headers: { "content-type": upload.contentType, "content-length": String(upload.sizeBytes) },
    });
    return { file: FilesEndpoints.storeJobResult.response.parse(await res.body.json()), created: res.statusCode === 201 };
  }
}
