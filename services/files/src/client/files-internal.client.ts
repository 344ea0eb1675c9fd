import type { Readable } from "node:stream";
import { Agent, request, type Dispatcher } from "undici";
import { FileRecord, type Identity } from "@meter/contracts";
import { InternalHttpError, signIdentity } from "@meter/service-kit";

export interface FilesInternalClientOptions {
  /** The files service, e.g. FILES_URL. */
  baseUrl: string;
  secret: string;
  /** Who is calling, e.g. "media-jobs". */
  service: string;
  timeoutMs?: number;
}

export interface JobResultUpload {
  jobId: string;
  userId: string;
  organizationId: string;
  filename: string;
  /** A ResultMimeType. */
  contentType: string;
  sizeBytes: number;
  body: Readable | Buffer;
}

/**
 * The files service's internal API for media-jobs, with bodies streamed both ways. Errors come back as
 * InternalHttpError carrying the contract code (`file_not_found`, `file_not_verified`, ...), which a
 * job can pass on to its caller as it is.
 */
export class FilesInternalClient {
  private readonly agent = new Agent({ keepAliveTimeout: 30_000 });
  private readonly origin: string;
  private readonly identity: Identity;

  constructor(private readonly opts: FilesInternalClientOptions) {
    this.origin = new URL(opts.baseUrl).origin;
    this.identity = { kind: "service", service: opts.service };
  }

  /** The file if it is the user's and verified (job results count as verified). */
  async verifiedFile(userId: string, fileId: string): Promise<FileRecord> {
    const res = await this.send("GET", `/internal/v1/files/${encodeURIComponent(fileId)}?${new URLSearchParams({ user_id: userId })}`);
    return FileRecord.parse(await res.body.json());
  }

  /** An input file's bytes, under the same rule; consume or destroy the stream. */
  async readFile(userId: string, fileId: string): Promise<{ mimeType: string; sizeBytes: number; body: Readable }> {
    const res = await this.send("GET", `/internal/v1/files/${encodeURIComponent(fileId)}/content?${new URLSearchParams({ user_id: userId })}`);
    return { mimeType: String(res.headers["content-type"]), sizeBytes: Number(res.headers["content-length"]), body: res.body };
  }

  /** Stores the job's result for the job's user; a repeat for the same job returns the first result. */
  async storeJobResult(upload: JobResultUpload): Promise<{ file: FileRecord; created: boolean }> {
    const query = new URLSearchParams({ user_id: upload.userId, organization_id: upload.organizationId, filename: upload.filename });
    const res = await this.send("PUT", `/internal/v1/job-results/${encodeURIComponent(upload.jobId)}?${query}`, {
      headers: { "content-type": upload.contentType, "content-length": String(upload.sizeBytes) },
      body: upload.body,
    });
    return { file: FileRecord.parse(await res.body.json()), created: res.statusCode === 201 };
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private async send(
    method: "GET" | "PUT",
    path: string,
    extra: { headers?: Record<string, string>; body?: Readable | Buffer } = {},
  ): Promise<Dispatcher.ResponseData> {
    const timeout = this.opts.timeoutMs ?? 60_000;
    const res = await request(this.origin + path, {
      method,
      headers: { ...extra.headers, ...signIdentity(this.opts.secret, this.identity, method, path) },
      body: extra.body,
      dispatcher: this.agent,
      headersTimeout: timeout,
      bodyTimeout: timeout,
    });
    if (res.statusCode >= 400) {
      const text = await res.body.text();
      const error = parseError(text);
      throw new InternalHttpError(res.statusCode, error.code, error.message, text);
    }
    return res;
  }
}

function parseError(text: string): { code: string; message: string } {
  try {
    const parsed = JSON.parse(text) as { error?: { code?: string; message?: string } };
    return { code: parsed.error?.code ?? "internal_error", message: parsed.error?.message ?? text };
  } catch {
    return { code: "internal_error", message: text };
  }
}
