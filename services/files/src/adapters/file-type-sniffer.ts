import { fileTypeFromBuffer } from "file-type";

/** Enough of the start of a file for every signature file-type reads in the types we accept. */
export const SNIFF_BYTES = 64 * 1024;

/** The MIME type the content's magic bytes say, or undefined when they match no known type. */
export async function sniffMimeType(head: Uint8Array): Promise<string | undefined> {
  return (await fileTypeFromBuffer(head))?.mime;
}
