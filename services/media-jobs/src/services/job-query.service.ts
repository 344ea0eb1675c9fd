import { MediaOperation, SCOPE_OF_OPERATION, type KeyIdentity, type ListJobsQuery } from "@meter/contracts";
import { isUuid, requireScope } from "@meter/service-kit";
import type { JobRecord } from "../domain/job-record";
import { MediaErrors } from "../errors";
import type { JobRepository } from "../repositories/job.repository";

/**
 * Reading jobs: a user sees their own jobs (another user's is as missing as one that never was), and
 * reading one takes the right of its operation (`images` for edits and image analysis, `text` for OCR
 * and text analysis), so a list shows only the operations the key may read.
 */
export class JobQueryService {
  constructor(private readonly repo: JobRepository) {}

  async get(identity: KeyIdentity, id: string): Promise<JobRecord> {
    const job = isUuid(id) ? await this.repo.findForUser(identity.user_id, id) : undefined;
    if (!job) throw MediaErrors.jobNotFound(id);
    requireScope(identity, SCOPE_OF_OPERATION[job.operation]);
    return job;
  }

  async list(identity: KeyIdentity, query: ListJobsQuery): Promise<{ jobs: JobRecord[]; hasMore: boolean }> {
    const operations = MediaOperation.options.filter((op) => identity.scopes.includes(SCOPE_OF_OPERATION[op]));
    let after: { createdAt: Date; id: string } | undefined;
    if (query.after !== undefined) {
      const last = isUuid(query.after) ? await this.repo.findForUser(identity.user_id, query.after) : undefined;
      if (!last) throw MediaErrors.badCursor(query.after);
      after = { createdAt: last.createdAt, id: last.id };
    }
    return this.repo.listForUser(identity.user_id, operations, query.limit, after);
  }
}
