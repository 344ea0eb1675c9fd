import { toMicrorub } from "@meter/contracts";

/**
 * The columns every hold owner's record table has (text's `text_requests`, media-jobs' `media_jobs`): the
 * caller and its idempotency scope, the hold and its estimate, and who drives the record, as pg returns
 * them (a bigint as text).
 */
export interface OwnedRecordRow {
  id: string;
  key_id: string;
  user_id: string;
  organization_id: string;
  idempotency_key: string;
  request_id: string | null;
  fingerprint: string;
  model: string;
  estimated_cost: string;
  hold_id: string;
  attempts: number;
  owner_id: string | null;
  next_attempt_at: Date;
  created_at: Date;
}

/** Those columns as a record's fields. */
export interface OwnedRecordFields {
  id: string;
  keyId: string;
  userId: string;
  organizationId: string;
  idempotencyKey: string;
  requestId: string | null;
  fingerprint: string;
  model: string;
  estimatedCost: number;
  holdId: string;
  attempts: number;
  ownerId: string | null;
  nextAttemptAt: Date;
  createdAt: Date;
}

export function ownedRecordOf(row: OwnedRecordRow): OwnedRecordFields {
  return {
    id: row.id,
    keyId: row.key_id,
    userId: row.user_id,
    organizationId: row.organization_id,
    idempotencyKey: row.idempotency_key,
    requestId: row.request_id,
    fingerprint: row.fingerprint,
    model: row.model,
    estimatedCost: toMicrorub(row.estimated_cost),
    holdId: row.hold_id,
    attempts: row.attempts,
    ownerId: row.owner_id,
    nextAttemptAt: row.next_attempt_at,
    createdAt: row.created_at,
  };
}
