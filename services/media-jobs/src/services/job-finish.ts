import { withHoldCommand } from "../domain/final-command";
import type { FinalOutcome, JobRecord } from "../domain/job-record";
import type { JobRepository } from "../repositories/job.repository";

export interface FinishDeps {
  repo: Pick<JobRepository, "finish">;
  /** Wakes the outbox relay after a commit that wrote a message. */
  onOutbox: () => void;
}

/**
 * Makes a job final with the command that resolves its hold, in one commit, and wakes the relay that
 * takes the command to billing. The job as final; undefined when it moved on meanwhile (only the state,
 * owner and attempt the outcome was decided on may finish it).
 */
export async function finishJob(deps: FinishDeps, outcome: FinalOutcome): Promise<JobRecord | undefined> {
  const done = await deps.repo.finish(withHoldCommand(outcome));
  if (done) deps.onOutbox();
  return done;
}
