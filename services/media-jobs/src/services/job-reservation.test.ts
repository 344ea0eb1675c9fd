import type { Hold, PlaceHoldRequest } from "@meter/contracts";
import { BillingUnreachable } from "@meter/service-clients";
import { AppError, createLogger } from "@meter/service-kit";
import type { FinalOutcome, JobRecord } from "../domain/job-record";
import type { JobRepository } from "../repositories/job.repository";
import { Refused } from "@meter/hold-client";
import { JobReservation } from "./job-reservation";

const JOB_ID = "6f1c2a3b-4d5e-8f60-9a1b-2c3d4e5f6a7b";

function reservingJob(patch: Partial<JobRecord> = {}): JobRecord {
  return {
    id: JOB_ID,
    keyId: "0d9f6a6e-2b1c-4b8e-9f3a-1c2d3e4f5a6b",
    userId: "1d9f6a6e-2b1c-4b8e-9f3a-1c2d3e4f5a6b",
    organizationId: "2d9f6a6e-2b1c-4b8e-9f3a-1c2d3e4f5a6b",
    endpoint: "ocr",
    idempotencyKey: "k",
    requestId: "r",
    fingerprint: "f",
    operation: "ocr",
    model: "meter-local-ocr",
    plan: { operation: "ocr", engine: "meter-local-ocr", tariff: { unit: "page", price_per_unit_microrub: 10 }, quantity: 2, settings: {}, files: [] },
    estimatedCost: 20,
    holdId: JOB_ID,
    state: "reserving",
    progress: { done: 0, total: 2, unit: "page" },
    result: null,
    quantity: null,
    cost: null,
    error: null,
    attempts: 1,
    provider: null,
    upstreamUsage: null,
    ownerId: "3d9f6a6e-2b1c-4b8e-9f3a-1c2d3e4f5a6b",
    nextAttemptAt: new Date(),
    createdAt: new Date(),
    queuedAt: null,
    startedAt: null,
    completedAt: null,
    ...patch,
  };
}

const hold = (id: string, status: Hold["status"]): Hold => ({
  hold_id: id,
  organization_id: null,
  key_id: null,
  status,
  amount_microrub: 20,
  settled_microrub: null,
  operation: "ocr",
  model: "meter-local-ocr",
  source: "media-jobs",
  owner_ref: JOB_ID,
  budget_day: null,
  created_at: new Date().toISOString(),
  resolved_at: null,
  grant_signature: `signed-${id}`,
});

/** The repository as the reservation uses it, recording what it was asked to do to the one job. */
function harness(placements: ((req: PlaceHoldRequest) => Promise<Hold>)[], options: { takenOver?: JobRecord } = {}) {
  const calls = {
    queued: 0,
    forgotten: 0,
    finished: [] as FinalOutcome[],
    moved: [] as string[],
    released: [] as string[],
    placed: [] as string[],
    outbox: 0,
    signatures: [] as (string | null)[],
  };
  let current: JobRecord | undefined;
  const repo = {
    markQueued: (job: JobRecord, signature: string | null) => {
      calls.queued++;
      calls.signatures.push(signature);
      current = { ...job, state: "queued", ownerId: null, attempts: 0 };
      return Promise.resolve(current);
    },
    forget: () => {
      calls.forgotten++;
      if (options.takenOver) {
        current = options.takenOver;
        return Promise.resolve(false);
      }
      current = undefined;
      return Promise.resolve(true);
    },
    finish: (outcome: FinalOutcome) => {
      calls.finished.push(outcome);
      current = { ...outcome.job, state: outcome.state };
      return Promise.resolve(current);
    },
    moveHold: (job: JobRecord, holdId: string) => {
      calls.moved.push(holdId);
      current = { ...job, holdId };
      return Promise.resolve(current);
    },
    find: () => Promise.resolve(current),
  };
  const billing = {
    placeHold: (req: PlaceHoldRequest) => {
      calls.placed.push(req.hold_id);
      const next = placements.shift();
      return next ? next(req) : Promise.resolve(hold(req.hold_id, "active"));
    },
    release: (id: string) => {
      calls.released.push(id);
      return Promise.resolve(hold(id, "released"));
    },
  };
  const reservation = new JobReservation({
    repo: repo as unknown as JobRepository,
    billing,
    logger: createLogger("test", "silent"),
    onOutbox: () => calls.outbox++,
  });
  return { reservation, calls };
}

describe("JobReservation", () => {
  test("a placed hold queues the job (its message and billing's signature of the placement in the same commit) and wakes the relay", async () => {
    const { reservation, calls } = harness([]);
    const job = await reservation.reserve(reservingJob());
    expect(job.state).toBe("queued");
    expect(calls).toMatchObject({ queued: 1, forgotten: 0, outbox: 1, placed: [JOB_ID], signatures: [`signed-${JOB_ID}`] });
  });

  test("a refusal on the request's own attempt forgets the job: nothing reserved, the client gets billing's error", async () => {
    const { reservation, calls } = harness([() => Promise.reject(new AppError("insufficient_balance", "no money"))]);
    await expect(reservation.reserve(reservingJob())).rejects.toEqual(expect.any(Refused));
    expect(calls).toMatchObject({ queued: 0, forgotten: 1, released: [], finished: [] });
  });

  test("a refusal whose job the reconciler took over meanwhile is not told to the client: it gets the job as it stands", async () => {
    const takenOver = reservingJob({ attempts: 2, ownerId: "5b0c4e52-6f0d-4a39-8d7e-0c1b2a3d4e5f" });
    const { reservation, calls } = harness([() => Promise.reject(new AppError("insufficient_balance", "no money"))], { takenOver });
    await expect(reservation.reserve(reservingJob())).resolves.toEqual(takenOver);
    expect(calls).toMatchObject({ forgotten: 1, finished: [], queued: 0 });
  });

  test("a refusal on a later attempt fails the job, whose client has seen it, and releases its hold id", async () => {
    const { reservation, calls } = harness([() => Promise.reject(new AppError("daily_budget_exceeded", "over budget"))]);
    const job = await reservation.reserve(reservingJob({ attempts: 2 }));
    expect(job.state).toBe("failed");
    expect(calls.forgotten).toBe(0);
    expect(calls.finished).toEqual([expect.objectContaining({ state: "failed", error: expect.objectContaining({ code: "daily_budget_exceeded" }) })]);
  });

  test("a hold id already used up is replaced by a fresh one, placed in the same attempt", async () => {
    const { reservation, calls } = harness([(req) => Promise.resolve(hold(req.hold_id, "released"))]);
    const job = await reservation.reserve(reservingJob());
    expect(job.state).toBe("queued");
    expect(calls.released).toEqual([JOB_ID]);
    expect(calls.moved).toHaveLength(1);
    expect(calls.placed).toEqual([JOB_ID, calls.moved[0]]);
    expect(job.holdId).toBe(calls.moved[0]);
  });

  test("billing never reached on the first attempt: 503, nothing reserved; an answer lost: the job stays reserving for the reconciler", async () => {
    const notDelivered = harness([() => Promise.reject(new BillingUnreachable("not_delivered"))]);
    await expect(notDelivered.reservation.reserve(reservingJob())).rejects.toMatchObject({ error: { code: "service_unavailable" } });
    expect(notDelivered.calls.forgotten).toBe(1);

    const lost = harness([() => Promise.reject(new BillingUnreachable("unknown"))]);
    const job = await lost.reservation.reserve(reservingJob());
    expect(job.state).toBe("reserving");
    expect(lost.calls).toMatchObject({ forgotten: 0, queued: 0, finished: [] });
  });
});
