import { CommandQueues } from "@meter/contracts";
import type { Bus, Consumer, RetryPolicy } from "@meter/messaging";
import type { JobRunner } from "../services/job-runner";

/**
 * The workers' queue: one delivery per job message, acked once the job is handled (run, or found to be
 * someone else's or already done). At most `prefetch` jobs run at once in this process. A handler that
 * throws (a dependency failed; the job went back to the queue) has its message retried with back-off,
 * and dead-lettered after the last attempt; the reconciler sends a queued job's message again if none
 * comes through.
 */
export function startJobRequestedConsumer(bus: Bus, runner: JobRunner, opts: { prefetch: number; retry: RetryPolicy }): Promise<Consumer> {
  return bus.consume({
    queue: CommandQueues.mediaJobs.queue,
    routingKeys: CommandQueues.mediaJobs.routingKeys,
    prefetch: opts.prefetch,
    retry: opts.retry,
    handler: (payload) => runner.handle(payload.job_id),
  });
}
