import type { Logger } from "@meter/service-kit";
import type { ObjectStore } from "../adapters/object-store";
import type { Clock } from "../domain/policy";
import type { FileRepository, StoredFile } from "../repositories/file.repository";

/**
 * Deletes the object of a file that is gone or rejected, and records that it did. A failure is only
 * logged: the retention sweeper deletes every such object that is still recorded as present.
 */
export async function discardObject(
  deps: { store: ObjectStore; files: FileRepository; clock: Clock; logger: Logger },
  file: Pick<StoredFile, "id" | "objectKey">,
): Promise<void> {
  try {
    await deps.store.remove(file.objectKey);
    await deps.files.markObjectPurged(file.id, deps.clock.now());
  } catch (error) {
    deps.logger.warn({ err: error, file_id: file.id }, "could not delete the object now; the retention sweeper will");
  }
}
