import type { JobErrorCode, MediaOperation, Unit } from "@meter/contracts";
import type { EditPlan, Progress } from "@meter/media-engines";

/** The public endpoint a job was created on: with the API key and Idempotency-Key, its idempotency scope. */
export type JobEndpoint = "images/edits" | "images/analysis" | "ocr" | "text/analysis";

/**
 * `reserving`: claimed, its hold being placed (a refusal deletes it: nothing was reserved). `queued`:
 * held, its message on the way to a worker. `running`: a worker holds its lease. `succeeded` and
 * `failed` are final, each committed with the command that settles or releases the hold.
 */
export type JobState = "reserving" | "queued" | "running" | "succeeded" | "failed";

/** An input file as accepted (the files service's verified record); the worker reads its bytes again. */
export interface JobInputFile {
  id: string;
  mimeType: string;
  sizeBytes: number;
  filename: string;
}

/** The price a job was accepted at: a hold keeps it, whatever the catalog says later. */
export interface JobTariff {
  unit: Unit;
  price_per_unit_microrub: number;
}

/**
 * Everything needed to run a job to the end, fixed when it is accepted and stored with it: which local
 * engine, the tariff and the quantity measured, the model's settings as parsed, and the inputs.
 */
export interface JobPlan {
  operation: MediaOperation;
  /** The registry id of the local engine the catalog entry's provider block named. */
  engine: string;
  tariff: JobTariff;
  /** The billable quantity measured before the hold, in the tariff's unit. */
  quantity: number;
  settings: Record<string, unknown>;
  files: JobInputFile[];
  /** Text analysis: the text. */
  input?: string;
  /** Image edits: the instruction plan parsed from the prompt. */
  edit?: EditPlan;
}

export interface StoredResult {
  file_id: string;
  mime_type: string;
  size_bytes: number;
  /** When the files service deletes the result file. */
  expires_at: string;
}

export interface StoredError {
  code: JobErrorCode;
  message: string;
}

export interface JobRecord {
  /** Derived from (key, endpoint, Idempotency-Key): idempotencyRecordId in @meter/service-kit (idempotency.ts). */
  id: string;
  keyId: string;
  userId: string;
  organizationId: string;
  endpoint: JobEndpoint;
  idempotencyKey: string;
  requestId: string | null;
  fingerprint: string;
  operation: MediaOperation;
  model: string;
  plan: JobPlan;
  estimatedCost: number;
  /** The job's hold: first the job's own id, a fresh one if that id was already used up. */
  holdId: string;
  state: JobState;
  progress: Progress;
  result: StoredResult | null;
  /** The quantity billed for what ran (succeeded jobs). */
  quantity: number | null;
  cost: number | null;
  error: StoredError | null;
  /** Reserving: placements tried; afterwards: runs started. Bounded by MEDIA_JOBS_MAX_ATTEMPTS. */
  attempts: number;
  /** The process driving it while it is reserving or running. */
  ownerId: string | null;
  /** Reserving and running: the owner's lease; queued: when its message is sent again if no worker took it. */
  nextAttemptAt: Date;
  createdAt: Date;
  queuedAt: Date | null;
  startedAt: Date | null;
  completedAt: Date | null;
}

export type NewJobRecord = Omit<JobRecord, "state" | "result" | "quantity" | "cost" | "error" | "queuedAt" | "startedAt" | "completedAt">;

/** What makes a job final, committed together with its hold's resolution. */
export type FinalOutcome =
  | { job: JobRecord; state: "succeeded"; result: StoredResult; quantity: number; cost: number; progress: Progress }
  | { job: JobRecord; state: "failed"; error: StoredError; releaseReason: string };
