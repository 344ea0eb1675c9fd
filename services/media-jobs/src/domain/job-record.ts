import type { JobErrorCode, MediaOperation, RoutedProvider, Unit } from "@meter/contracts";
import type { HoldResolution } from "@meter/hold-client";
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

/** The tokens an upstream reported for a job's calls: what the operator paid, not the tariff the customer did. */
export interface UpstreamUsage {
  input_tokens: number;
  output_tokens: number;
}

/**
 * Everything needed to run a job to the end, fixed when it is accepted and stored with it: which local
 * engine (or which upstream providers), the tariff and the quantity measured, the model's settings as
 * parsed, and the inputs.
 */
export interface JobPlan {
  operation: MediaOperation;
  /** The registry id of the local engine the catalog entry's provider block named; `upstream` for a model on upstream providers. */
  engine: string;
  /** A model on upstream providers (docs/api.md, "Media on upstream models"): its providers, routed as text's are. */
  upstream?: { providers: RoutedProvider[] };
  tariff: JobTariff;
  /** The billable quantity measured before the hold, in the tariff's unit. */
  quantity: number;
  settings: Record<string, unknown>;
  files: JobInputFile[];
  /** Text analysis: the text. */
  input?: string;
  /** Image edits on the local engine: the instruction plan parsed from the prompt. */
  edit?: EditPlan;
  /** Image edits on an upstream model: the prompt as the client wrote it. */
  prompt?: string;
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
  /** Of a model on upstream providers: the provider a call was last sent to (its catalog id), for the operator. */
  provider: string | null;
  /** The tokens the upstream reported, once the job succeeded on an upstream model. */
  upstreamUsage: UpstreamUsage | null;
  /** The process driving it while it is reserving or running. */
  ownerId: string | null;
  /** Reserving and running: the owner's lease; queued: when its message is sent again if no worker took it. */
  nextAttemptAt: Date;
  createdAt: Date;
  queuedAt: Date | null;
  startedAt: Date | null;
  completedAt: Date | null;
}

export type NewJobRecord = Omit<
  JobRecord,
  "state" | "result" | "quantity" | "cost" | "error" | "queuedAt" | "startedAt" | "completedAt" | "provider" | "upstreamUsage"
>;

/** What makes a job final, committed together with its hold's resolution. */
export type FinalOutcome =
  | { job: JobRecord; state: "succeeded"; result: StoredResult; quantity: number; cost: number; progress: Progress; upstreamUsage?: UpstreamUsage }
  | { job: JobRecord; state: "failed"; error: StoredError; releaseReason: string };

/** How a final job resolved its hold (what billing's hold audit is told); undefined while it is unfinished. */
export function holdResolutionOf(job: JobRecord): HoldResolution | undefined {
  if (job.state === "succeeded") return { settles: true, amount: job.cost ?? 0 };
  if (job.state === "failed") return { settles: false, reason: "the job failed; nothing charged" };
  return undefined;
}
