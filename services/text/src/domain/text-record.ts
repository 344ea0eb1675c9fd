import type { ErrorCode, Provider, RoutedProvider, TextTariff } from "@meter/contracts";
import type { HoldResolution } from "@meter/hold-client";
import type { ChatRequest } from "@meter/upstreams";

export type TextEndpoint = "messages" | "responses";

/**
 * Everything needed to run a request to the end, fixed when it is accepted and stored with it: the
 * upstream call, the provider, and the tariff it was priced at (a hold keeps the price it was placed
 * at, even if the catalog changes while it runs).
 */
export interface TextPlan {
  endpoint: TextEndpoint;
  model: string;
  /** The model's first provider; its only one when `providers` is absent. */
  provider: Provider;
  /** The model's providers when it has several (docs/api.md, "Several providers per model"). */
  providers?: RoutedProvider[];
  tariff: TextTariff;
  request: ChatRequest;
  inputTokensEstimate: number;
  estimatedCost: number;
}

/**
 * `reserving`: claimed; the hold is being placed and the upstream called (both repeated on a later
 * attempt). `completed` and `failed` are final, each committed with the command that settles or
 * releases the hold.
 */
export type TextState = "reserving" | "completed" | "failed";

export interface TextResult {
  text: string;
  stop_reason: "end_turn" | "max_tokens";
  usage: { input_tokens: number; output_tokens: number };
}

/** A failed request's error, kept to be answered again, the same, on every replay. */
export interface StoredError {
  code: ErrorCode;
  message: string;
}

export interface TextRecord {
  /** Derived from (key, endpoint, Idempotency-Key): idempotencyRecordId in @meter/service-kit (idempotency.ts). */
  id: string;
  keyId: string;
  userId: string;
  organizationId: string;
  endpoint: TextEndpoint;
  /** What its hold is placed for: every text request is the `text` operation. */
  operation: "text";
  idempotencyKey: string;
  /** The creating request's x-request-id (none for records older than the column). */
  requestId: string | null;
  fingerprint: string;
  model: string;
  plan: TextPlan;
  estimatedCost: number;
  /** The hold of this request: first the record's own id, a fresh one if that id was already used up. */
  holdId: string;
  /**
   * The allowance its hold was placed on, here, in the claim's commit (docs/api.md, "Allowances"); its
   * hold id is then a fresh one, never the record's id. Null: a hold placed in billing.
   */
  allowanceId: string | null;
  state: TextState;
  result: TextResult | null;
  cost: number | null;
  error: StoredError | null;
  /**
   * Of a model with several providers, the provider (its catalog id) the request was last sent to: a
   * later attempt calls that one only, since it may have run the request already.
   */
  provider?: string | null;
  /** Attempts started, each of which may call the upstream once; bounded (see text-runner.ts). */
  attempts: number;
  /** The process driving it; another takes it over when that one's heartbeat stops. */
  ownerId: string | null;
  /** When its owner takes it up again (a parked record), or its lease while it is being driven. */
  nextAttemptAt: Date;
  createdAt: Date;
}

export type NewTextRecord = Omit<TextRecord, "state" | "result" | "cost" | "error" | "provider">;

/** What makes a record final, committed together with the hold's resolution. */
export type FinalOutcome =
  /** upstreamMs: the upstream call that answered, for the request log (unknown for an answer kept across attempts). */
  (
    | { record: TextRecord; state: "completed"; result: TextResult; cost: number; upstreamMs?: number }
    | { record: TextRecord; state: "failed"; error: StoredError; releaseReason: string }
  ) & {
    /** billing's signature of the hold placement the attempt got (a per-request hold), kept with the record for the books cross-check. */
    grantSignature?: string | undefined;
  };

/** How a final record resolved its hold (what billing's hold audit is told); undefined while it is unfinished. */
export function holdResolutionOf(record: TextRecord): HoldResolution | undefined {
  if (record.state === "completed") return { settles: true, amount: record.cost ?? 0 };
  if (record.state === "failed") return { settles: false, reason: "the request failed; nothing charged" };
  return undefined;
}
