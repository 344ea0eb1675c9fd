import { FilesErrors } from "../errors";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A file id from the path: anything that is not a UUID names no file (404, like someone else's). */
export function fileIdParam(value: string | string[] | undefined): string {
  if (typeof value !== "string" || !UUID.test(value)) throw FilesErrors.fileNotFound(String(value));
  return value.toLowerCase();
}
