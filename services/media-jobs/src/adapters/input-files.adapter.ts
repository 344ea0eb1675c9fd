import type { Readable } from "node:stream";
import type { FileRecord } from "@meter/contracts";
import type { FilesClient } from "@meter/service-clients";
import { InternalHttpError } from "@meter/service-kit";
import type { JobInputFile } from "../domain/job-record";
import type { UpstreamInputFile } from "@meter/media-engines";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The files service said no: the file is not the user's (or not there), or not verified. */
export class InputFileRefused extends Error {
  constructor(
    readonly code: "file_not_found" | "file_not_verified",
    readonly fileId: string,
  ) {
    super(code === "file_not_found" ? `file ${fileId} does not exist` : `file ${fileId} has not passed verification`);
    this.name = "InputFileRefused";
  }
}

/**
 * A job's input files, through the files service's internal API, which applies the rule: only the
 * user's own files, only once verified. Anything else that goes wrong (the files service unreachable)
 * comes out as it is, for the caller to treat as a passing outage.
 */
export class InputFiles {
  constructor(private readonly files: FilesClient) {}

  /** The verified records of the user's files, in order; InputFileRefused for the first that is not. */
  async verified(userId: string, fileIds: readonly string[]): Promise<FileRecord[]> {
    return Promise.all(
      fileIds.map(async (id) => {
        // Not a UUID names nobody's file: as missing as any other.
        if (!UUID.test(id)) throw new InputFileRefused("file_not_found", id);
        try {
          return await this.files.verifiedFile(userId, id.toLowerCase());
        } catch (e) {
          throw refusalOf(e, id);
        }
      }),
    );
  }

  /** One input's bytes, read whole: engines take buffers (a PDF needs all of its bytes anyway). */
  async read(userId: string, file: JobInputFile): Promise<UpstreamInputFile> {
    let body: Readable;
    try {
      ({ body } = await this.files.readFile(userId, file.id));
    } catch (e) {
      throw refusalOf(e, file.id);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of body) {
      const buffer = chunk as Buffer;
      size += buffer.length;
      // The files service bounds every file; a body longer than the verified size is not that file.
      if (size > file.sizeBytes) {
        body.destroy();
        throw new Error(`file ${file.id} is longer than its verified ${file.sizeBytes} bytes`);
      }
      chunks.push(buffer);
    }
    return { data: Buffer.concat(chunks, size), mimeType: file.mimeType, filename: file.filename, fileId: file.id };
  }
}

function refusalOf(e: unknown, fileId: string): unknown {
  if (e instanceof InternalHttpError && e.code === "file_not_found") return new InputFileRefused("file_not_found", fileId);
  if (e instanceof InternalHttpError && e.code === "file_not_verified") return new InputFileRefused("file_not_verified", fileId);
  return e;
}
