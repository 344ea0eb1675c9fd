import { UploadMimeType } from "@meter/contracts";
import { AppError } from "@meter/service-kit";

/** Every error the files service answers with; use-cases throw these and know nothing of HTTP. */
export const FilesErrors = {
  /** Someone else's file is indistinguishable from a missing one. */
  fileNotFound: (id: string) => new AppError("file_not_found", `file ${id} does not exist`),
  contentNeedsScope: (file: { id: string; readScope: string | null }) =>
    new AppError(
      "insufficient_scope",
      file.readScope === null
        ? `reading file ${file.id} needs the "files:read" scope`
        : `reading file ${file.id} (a job's result) needs the "files:read" or "${file.readScope}" scope`,
    ),
  fileNotVerified: (id: string, status: string) =>
    new AppError("file_not_verified", `file ${id} is ${status}; only verified files can be read`, { details: { status } }),
  fileTooLarge: (max: number) => new AppError("payload_too_large", `size_bytes: a file may be at most ${max} bytes`),
  typeNotAccepted: (type: string) =>
    new AppError("unsupported_media_type", `mime_type: ${type} is not accepted; upload one of ${UploadMimeType.options.join(", ")}`),
  quotaExceeded: (quota: number) => new AppError("file_quota_exceeded", `this file would take the user's stored files over the quota of ${quota} bytes`),
  invalidUploadLink: () => new AppError("invalid_upload_link", "the upload link is not valid"),
  uploadLinkExpired: () => new AppError("upload_link_expired", "the upload link has expired; create the file again"),
  invalidUploadHeaders: (problem: string) => new AppError("invalid_upload_headers", `${problem}; send exactly the headers given in upload.headers`),
  tooManyBytes: (declared: number) =>
    new AppError("payload_too_large", `the upload is larger than the declared ${declared} bytes`, { headers: { connection: "close" } }),
  uploadAlreadyCompleted: (status: string) =>
    new AppError("upload_already_completed", `this file was already uploaded (it is ${status})`, { details: { status } }),
  uploadInProgress: () => new AppError("conflict", "an upload to this file is in progress"),
  uploadNotFinished: () => new AppError("conflict", "the upload is still in progress; complete the file once the PUT has answered"),
  unsupportedResultType: (type: string) => new AppError("unsupported_media_type", `a job result cannot be of type "${type}"`),
  resultLengthRequired: () => new AppError("invalid_request", "a job result needs a Content-Length between 1 and the maximum file size"),
  jobResultGone: (jobId: string) => new AppError("conflict", `job ${jobId} already stored its result, which has since been deleted or expired`),
  invalidCursor: () => new AppError("invalid_request", "cursor: not a cursor this API returned"),
};
