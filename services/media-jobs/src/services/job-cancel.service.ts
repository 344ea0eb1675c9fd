import type { KeyIdentity } from "@meter/contracts";
import type { JobRecord } from "../domain/job-record";
import { MediaErrors } from "../errors";
import type { JobRepository } from "../repositories/job.repository";
import { finishJob } from "./job-finish";
import type { JobQueryService } from "./job-query.service";

/**
 * `POST /v1/jobs/{id}/cancel`. A job that has not started (queued, or still reserving) fails with
 * `cancelled` and its hold is released, in one commit; cancelling it again answers the same job. A job
 * a worker has started is not stopped: it finishes and is charged for what ran, so the answer is 409.
 * A finished job cannot be cancelled either (409).
 */
export class JobCancelService {
  constructor(
    private readonly deps: {
      repo: JobRepository;
      queries: JobQueryService;
      onOutbox: () => void;
    },
  ) {}

  async cancel(identity: KeyIdentity, id: string): Promise<JobRecord> {
    for (;;) {
      const job = await this.deps.queries.get(identity, id);
      if (job.state === "running") throw MediaErrors.notCancellable(`job ${id} is running; it will finish and be charged for what it does`);
      if (job.state === "failed" && job.error?.code === "cancelled") return job;
      if (job.state === "succeeded" || job.state === "failed") throw MediaErrors.notCancellable(`job ${id} has already ${job.state}`);
      const cancelled = await finishJob(this.deps, {
        job,
        state: "failed",
        error: { code: "cancelled", message: "cancelled by the client before it started; nothing was charged" },
        releaseReason: "job cancelled before it started; nothing charged",
      });
      if (cancelled) return cancelled;
      // A worker took it (or its reservation moved on) meanwhile: decide again on what it is now.
    }
  }
}
