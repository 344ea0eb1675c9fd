import type { FileRecord, FileStatus, UploadInstructions } from "@meter/contracts";
import type { StoredFile } from "../repositories/file.repository";

/** The public shape of a file. Only files the caller can still see are rendered. */
export function toFileRecord(file: StoredFile, upload?: UploadInstructions): FileRecord {
  return {
    id: file.id,
    object: "file",
    purpose: file.purpose,
    filename: file.filename,
    mime_type: file.mimeType,
    size_bytes: file.sizeBytes,
    sha256: file.sha256,
    status: publicStatus(file),
    created_at: file.createdAt.toISOString(),
    expires_at: file.expiresAt.toISOString(),
    ...(upload ? { upload } : {}),
    ...(file.status === "rejected" && file.rejectionCode ? { rejection: { code: file.rejectionCode } } : {}),
  };
}

function publicStatus(file: StoredFile): FileStatus {
  if (file.status === "deleted" || file.status === "expired") throw new Error(`file ${file.id} is ${file.status} and has no public record`);
  return file.status;
}
