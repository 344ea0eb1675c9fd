/** Enough of the start of a file for every signature file-type reads in the types we accept. */
export const SNIFF_BYTES = 64 * 1024;

/**
 * file-type is an ES module only; it is loaded on first use, so the API process (and its tests, which
 * share the composition root with the worker) never loads what only the worker runs.
 */
let fileType: Promise<typeof import("file-type")> | undefined;

/** The MIME type the content's magic bytes say, or undefined when they match no known type. */
export async function sniffMimeType(head: Uint8Array): Promise<string | undefined> {
  fileType ??= import("file-type");
  return (await (await fileType).fileTypeFromBuffer(head))?.mime;
}
