import type { KeyIdentity, MediaOperation } from "@meter/contracts";
import { Refused } from "@meter/hold-client";
import { fingerprintOf, idempotencyRecordId, requireIdempotencyKey, type Logger } from "@meter/service-kit";
import type { JobEndpoint, JobRecord, NewJobRecord } from "../domain/job-record";
import { MediaErrors } from "../errors";
import type { JobRepository } from "../repositories/job.repository";
import type { JobPlanner, PlanInput } from "./job-planner";
import type { JobReservation } from "./job-reservation";

export interface JobRequestDeps {
  repo: JobRepository;
  planner: JobPlanner;
  reservation: Pick<JobReservation, "place" | "reserve">;
  /** This process, the owner of the jobs it is admitting. */
  processId: string;
  /** How long a new job is left to its request before the reconciler may take up its reservation. */
  leaseMs: number;
  logger: Logger;
}

export interface JobOutcome {
  job: JobRecord;
  /** A repeat of an earlier request with the same key and body. */
  replayed: boolean;
}

/**
 * Accepting a paid job: a repeat of a key already used answers with its job (another body is refused);
 * a new one is validated and priced (refusals here reserve nothing), then its idempotency key is claimed
 * (the job row) while its hold is placed under the job's id, and once the hold is there the job is
 * queued and its message written in one commit.
 */
export class JobRequestService {
  constructor(private readonly deps: JobRequestDeps) {}

  async create(input: {
    identity: KeyIdentity;
    requestId: string;
    endpoint: JobEndpoint;
    idempotencyKey: string | undefined;
    body: unknown;
    plan: PlanInput & { operation: MediaOperation };
  }): Promise<JobOutcome> {
    const key = requireIdempotencyKey(input.idempotencyKey);
    const { identity } = input;
    const id = idempotencyRecordId("media-job", identity.key_id, input.endpoint, key);
    const fingerprint = fingerprintOf(input.body);

    // A repeat answers from the job as it is: its inputs may be gone by now, and it needs no new price.
    const existing = await this.deps.repo.find(id);
    if (existing) return this.repeat(existing, fingerprint);

    const priced = await this.deps.planner.plan(identity.user_id, input.plan);
    const plan = priced.job!;
    const now = new Date();
    const newJob: NewJobRecord = {
      id,
      keyId: identity.key_id,
      userId: identity.user_id,
      organizationId: identity.organization_id,
      endpoint: input.endpoint,
      idempotencyKey: key,
      requestId: input.requestId,
      fingerprint,
      operation: plan.operation,
      model: priced.model,
      plan,
      estimatedCost: priced.estimatedCost,
      holdId: id,
      progress: { done: 0, total: plan.quantity, unit: plan.tariff.unit },
      attempts: 1,
      ownerId: this.deps.processId,
      nextAttemptAt: new Date(now.getTime() + this.deps.leaseMs),
      createdAt: now,
    };
    const placement = this.deps.reservation.place(newJob);
    // Observed by the reservation, or not at all (a duplicate): never an unhandled rejection.
    placement.catch(() => undefined);
    const { job, created } = await this.deps.repo.claim(newJob);
    // A concurrent duplicate got there first; its placement was of the same hold (a no-op).
    if (!created) return this.repeat(job, fingerprint);
    try {
      return { job: await this.deps.reservation.reserve(job, placement), replayed: false };
    } catch (e) {
      if (e instanceof Refused) throw e.error;
      // Something broke mid-way (e.g. our database): money may be held, so the job is accepted as it
      // stands, never an error; the reconciler takes up its reservation when the lease runs out.
      this.deps.logger.error({ err: e, job: id }, "job admission interrupted; left to the reconciler");
      return { job, replayed: false };
    }
  }

  private repeat(job: JobRecord, fingerprint: string): JobOutcome {
    if (job.fingerprint !== fingerprint) throw MediaErrors.idempotencyMismatch();
    return { job, replayed: true };
  }
}
