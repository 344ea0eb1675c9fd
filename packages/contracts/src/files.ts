import { z } from "zod";
import { endpoint } from "./endpoints";
import { Scope } from "./scopes";

/** What a key holder may upload (docs/api.md "Files"). */
export const UploadMimeType = z.enum(["image/png", "image/jpeg", "image/webp", "image/tiff", "image/gif", "application/pdf"]);
export type UploadMimeType = z.infer<typeof UploadMimeType>;

/** What a media job may store as its result: PNG, JPEG, WebP, PDF, JSON and plain text. */
export const ResultMimeType = z.enum(["image/png", "image/jpeg", "image/webp", "application/pdf", "application/json", "text/plain"]);
export type ResultMimeType = z.infer<typeof ResultMimeType>;

export const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, "must be a SHA-256 digest as 64 lowercase hex characters");

/**
 * Characters a name may not hold: control characters (Cc), invisible format characters (Cf: bidi
 * controls such as U+202E, which shows `gnp.exe` as `exe.png`, zero-width characters, U+FEFF), line
 * and paragraph separators, and lone surrogates, which no UTF-8 database can store.
 */
const HIDDEN_OR_CONTROL = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

/**
 * A name to show and to offer on download, not a path: 1-255 characters, no control or invisible
 * formatting characters, no path separators, not "." or "..".
 */
export const Filename = z
  .string()
  .min(1, "must not be empty")
  .max(255, "must be at most 255 characters")
  .superRefine((name, ctx) => {
    // Named by code point: the character itself would be invisible in the message, or reorder it.
    const found = HIDDEN_OR_CONTROL.exec(name)?.[0]?.codePointAt(0);
    if (found !== undefined) {
      const codePoint = `U+${found.toString(16).toUpperCase().padStart(4, "0")}`;
      ctx.addIssue({ code: "custom", message: `must not contain control or invisible formatting characters (found ${codePoint})` });
    }
  })
  .regex(/^[^/\\]+$/, "must not contain / or \\")
  .refine((name) => name !== "." && name !== "..", "must not be . or ..")
  .refine((name) => name.trim().length > 0, "must not be blank");

/**
 * POST /v1/files. The service checks the type against UploadMimeType (415 `unsupported_media_type`) and
 * the size against its MAX_FILE_BYTES (413 `payload_too_large`): well-formed requests for what is not
 * accepted, not malformed ones.
 */
export const CreateFileRequest = z.strictObject({
  filename: Filename,
  mime_type: z.string().min(1, "must not be empty").max(255, "must be at most 255 characters"),
  size_bytes: z.number().int().min(1),
  sha256: Sha256Hex,
});
export type CreateFileRequest = z.infer<typeof CreateFileRequest>;

/**
 * `uploading` and `uploaded` sit between `awaiting_upload` and `verifying`: the PUT is streaming, or
 * has finished and waits for the completion call.
 */
export const FileStatus = z.enum(["awaiting_upload", "uploading", "uploaded", "verifying", "verified", "rejected"]);
export type FileStatus = z.infer<typeof FileStatus>;

export const RejectionCode = z.enum(["upload_missing", "size_mismatch", "checksum_mismatch", "mime_mismatch", "malware_detected", "image_too_large"]);
export type RejectionCode = z.infer<typeof RejectionCode>;

export const FilePurpose = z.enum(["upload", "job_result"]);
export type FilePurpose = z.infer<typeof FilePurpose>;

/** Where and how to PUT the bytes: the URL is the credential, `headers` must be sent exactly. */
export const UploadInstructions = z.object({
  url: z.url(),
  method: z.literal("PUT"),
  headers: z.record(z.string(), z.string()),
  expires_at: z.string(),
});
export type UploadInstructions = z.infer<typeof UploadInstructions>;

export const FileRecord = z.object({
  id: z.uuid(),
  object: z.literal("file"),
  purpose: FilePurpose,
  filename: z.string(),
  mime_type: z.string(),
  size_bytes: z.number().int(),
  sha256: Sha256Hex,
  status: FileStatus,
  created_at: z.string(),
  expires_at: z.string(),
  /** Only in the 201 of POST /v1/files. */
  upload: UploadInstructions.optional(),
  /** Only when `status` is `rejected`. */
  rejection: z.object({ code: RejectionCode }).optional(),
});
export type FileRecord = z.infer<typeof FileRecord>;

export const FileList = z.object({
  object: z.literal("list"),
  data: z.array(FileRecord),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
});
export type FileList = z.infer<typeof FileList>;

export const FileDeleted = z.object({ id: z.uuid(), object: z.literal("file"), deleted: z.literal(true) });
export type FileDeleted = z.infer<typeof FileDeleted>;

/** The header of an upload PUT that carries the declared SHA-256 (hex). */
export const UploadSha256Header = "x-content-sha256";

export const InternalFileQuery = z.strictObject({ user_id: z.uuid() });
export type InternalFileQuery = z.infer<typeof InternalFileQuery>;

export const StoreJobResultQuery = z.strictObject({
  user_id: z.uuid(),
  organization_id: z.uuid(),
  filename: Filename,
  /** The job's operation scope: keys holding it may download the result without `files:read`. */
  read_scope: Scope.optional(),
});
export type StoreJobResultQuery = z.infer<typeof StoreJobResultQuery>;

export const JobId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._:-]+$/, "must be 1-200 of A-Z a-z 0-9 . _ : -");

/** What media-jobs calls on the files service (signed service identity). */
export const FilesEndpoints = {
  /** `?user_id=`: the file if it is the user's and verified (404 `file_not_found`, 409 `file_not_verified`). */
  verifiedFile: endpoint("GET", "/internal/v1/files/:id", undefined, FileRecord),
  /** `?user_id=`: its bytes, streamed, under the same rule. */
  content: endpoint("GET", "/internal/v1/files/:id/content", undefined, undefined),
  /**
   * `?user_id=&organization_id=&filename=`: a job's result, the body streamed with Content-Type (a
   * ResultMimeType) and Content-Length; 201 with the record, 200 with the same record when the job
   * already stored its result.
   */
  storeJobResult: endpoint("PUT", "/internal/v1/job-results/:jobId", undefined, FileRecord),
};
