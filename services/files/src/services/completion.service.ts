import { setTimeout as sleep } from "node:timers/promises";
import type { FileRecord } from "@meter/contracts";
import { FilesErrors } from "../errors";
import type { Clock, FilesPolicy } from "../domain/policy";
import type { FileRepository, StoredFile } from "../repositories/file.repository";
import { toFileRecord } from "./file-record";
import type { UploadAttemptService } from "./upload-attempt.service";

export interface CompletionServiceDeps {
  files: FileRepository;
  attempts: Pick<UploadAttemptService, "releaseIfAbandoned">;
  policy: FilesPolicy;
  clock: Clock;
  /** Wakes the outbox relay so the verification message leaves now rather than at its next poll. */
  kickOutbox: () => void;
}

export interface Completion {
  /** True when the record carries the verdict (verified or rejected); false while it is still verifying. */
  final: boolean;
  file: FileRecord;
}

/**
 * POST /v1/files/{id}/complete: hands the file to the verification worker (the state change and the
 * message commit together) and waits a few seconds for the verdict. Calling it again is harmless: a
 * file already verifying is only waited for, a decided one is returned as it is.
 */
export class CompletionService {
  constructor(private readonly deps: CompletionServiceDeps) {}

  async complete(userId: string, id: string): Promise<Completion> {
    const { files, clock, policy } = this.deps;
    let file = await this.visible(userId, id);
    if (file.status === "uploading") {
      // A PUT that died left nothing to verify: the file is completed as one never uploaded.
      if (!(await this.deps.attempts.releaseIfAbandoned(file.id))) throw FilesErrors.uploadNotFinished();
      file = await this.visible(userId, id);
    }
    if (file.status === "awaiting_upload" || file.status === "uploaded") {
      // An upload never made is still verified: the worker finds no object and rejects it as upload_missing.
      if (await files.requestVerification(file.id, userId, clock.now())) this.deps.kickOutbox();
      file = await this.visible(userId, id);
    }
    const deadline = Date.now() + policy.completeWaitMs;
    while (file.status === "verifying" && Date.now() < deadline) {
      await sleep(policy.completePollMs);
      file = await this.visible(userId, id);
    }
    return { final: file.status === "verified" || file.status === "rejected", file: toFileRecord(file) };
  }

  private async visible(userId: string, id: string): Promise<StoredFile> {
    const file = await this.deps.files.findVisible(id, userId, this.deps.clock.now());
    if (!file) throw FilesErrors.fileNotFound(id);
    return file;
  }
}
