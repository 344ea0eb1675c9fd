import { MediaOperation, type ListJobsQuery } from "@meter/contracts";
import { isUuid } from "@meter/service-kit";
import type { JobRecord } from "../domain/job-record";
import { MediaErrors } from "../errors";
import type { JobRepository } from "../repositories/job.repository";

/**
 * A signed-in member's jobs, for the web cabinet: every job of the user, whichever key made it and
 * whatever its operation (a key sees only the operations its scopes allow; the person owns them all).
 */
export class MemberJobsService {
  constructor(private readonly repo: JobRepository) {}

  async list(userId: string, query: ListJobsQuery): Promise<{ jobs: JobRecord[]; hasMore: boolean }> {
    let after: { createdAt: Date; id: string } | undefined;
    if (query.after !== undefined) {
      const last = isUuid(query.after) ? await this.repo.findForUser(userId, query.after) : undefined;
      if (!last) throw MediaErrors.badCursor(query.after);
      after = { createdAt: last.createdAt, id: last.id };
    }
    return this.repo.listForUser(userId, MediaOperation.options, query.limit, after);
  }
}
