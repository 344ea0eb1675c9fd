import type { JobList, JobRecord as JobBody, JobStatus } from "@meter/contracts";
import type { JobRecord, JobState } from "../domain/job-record";

/** A reservation under way is, to the client, a job waiting its turn. */
const STATUS: Record<JobState, JobStatus> = {
  reserving: "queued",
  queued: "queued",
  running: "running",
  succeeded: "succeeded",
  failed: "failed",
};

export function isFinal(job: JobRecord): boolean {
  return job.state === "succeeded" || job.state === "failed";
}

export function renderJob(job: JobRecord): JobBody {
  const billing: JobBody["billing"] =
    job.state === "succeeded"
      ? { status: "settled", estimated_cost_microrub: job.estimatedCost, cost_microrub: job.cost ?? 0 }
      : job.state === "failed"
        ? { status: "released", estimated_cost_microrub: job.estimatedCost, cost_microrub: 0 }
        : { status: "reserved", estimated_cost_microrub: job.estimatedCost, cost_microrub: null };
  return {
    id: job.id,
    object: "job",
    operation: job.operation,
    model: job.model,
    status: STATUS[job.state],
    created_at: job.createdAt.toISOString(),
    started_at: job.startedAt?.toISOString() ?? null,
    completed_at: job.completedAt?.toISOString() ?? null,
    result: job.result ? { file_id: job.result.file_id, mime_type: job.result.mime_type, size_bytes: job.result.size_bytes } : null,
    error: job.error,
    billing,
    progress: job.progress,
    expires_at: job.result?.expires_at ?? null,
    usage: { unit: job.plan.tariff.unit, quantity: job.quantity ?? job.plan.quantity },
    file_ids: job.plan.files.map((f) => f.id),
    ...(job.plan.edit ? { plan: job.plan.edit } : {}),
  };
}

export function renderJobList(jobs: JobRecord[], hasMore: boolean): JobList {
  const data = jobs.map(renderJob);
  return { object: "list", data, has_more: hasMore, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}
