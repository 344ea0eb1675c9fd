import { randomUUID } from "node:crypto";
import type { Allocator } from "@meter/allowances";
import type { AllowanceSpend, MessagePayload } from "@meter/contracts";
import type { Logger } from "@meter/service-kit";
import type { NewTextRecord, TextRecord } from "./text-record";

/**
 * Text's side of the allowance rule (docs/api.md, "Allowances"), its one TypeScript home, read here first:
 *
 * - Deciding. The allocator (@meter/allowances) says which of this process's open allowances of the key
 *   has room for a request's estimate; a request takes one when it is claimed (`claimOnAllowance`), and a
 *   first attempt whose own hold billing refused moves onto one (`moveOntoAllowance`). An estimate the
 *   database did not place is given back.
 * - Placing. The estimate goes into the allowance's `used` in the request's own commit, only while the
 *   allowance is open, this process's and within its budget day, under a row lock: the claim statement
 *   (TextRequestRepository.insertClaims) and the move (TextRequestRepository.moveToAllowance). The CHECK
 *   `allowances_used_within_granted` (migration 20261126170000_allowances) keeps `used <= granted`.
 * - Telling billing. A request on an allowance names it in its settle or release (`allowanceSpendOf`);
 *   a closed allowance is released with the estimates used (`allowanceRelease`, written by
 *   AllowanceRepository.closeSettled once no request on it is reserving). Both go through the
 *   message catalog's check like every outbox message.
 */

type Claimed = { record: TextRecord; created: boolean };

/** The store's claim (TextRequestRepository.claim): a record on an allowance is inserted only while the allowance is open. */
export interface ClaimStore {
  claim(record: NewTextRecord): Promise<Claimed | { allowanceClosed: true }>;
}

/** The store's move of a refused record onto an allowance (TextRequestRepository.moveToAllowance); undefined when not moved. */
export interface MoveStore {
  moveToAllowance(record: TextRecord, allowanceId: string, holdId: string): Promise<TextRecord | undefined>;
}

/**
 * The claim with its hold placed on an allowance of the key, in one commit, when this process has one
 * with room; undefined otherwise (then the request places its own hold, and a grant is under way).
 */
export async function claimOnAllowance(
  allowances: Pick<Allocator, "take" | "giveBack">,
  repo: ClaimStore,
  record: NewTextRecord,
): Promise<Claimed | undefined> {
  const allowanceId = allowances.take({ keyId: record.keyId, organizationId: record.organizationId }, record.estimatedCost);
  if (allowanceId === null) return undefined;
  // Never the record's own id: a duplicate's placement under that id can then never be this hold.
  const claimed = await repo.claim({ ...record, holdId: randomUUID(), allowanceId });
  if ("allowanceClosed" in claimed) {
    allowances.giveBack(allowanceId, record.estimatedCost, false);
    return undefined;
  }
  if (!claimed.created || claimed.record.allowanceId !== allowanceId) allowances.giveBack(allowanceId, record.estimatedCost, true);
  return claimed;
}

/**
 * Billing refused the hold while this process has an allowance of the key with room (money the
 * refusal counted as parked in it): the request is placed on that allowance instead, under a fresh
 * hold id. Only a first attempt on its own id, so no earlier placement of it can still land.
 * Undefined: not moved; "unknown": whether it moved is not known (the next attempt finds out).
 */
export async function moveOntoAllowance(
  allowances: Pick<Allocator, "takeIfRoom" | "giveBack" | "whenGranted"> | undefined,
  repo: MoveStore,
  logger: Logger,
  r: TextRecord,
): Promise<TextRecord | undefined | "unknown"> {
  if (!allowances || r.attempts !== 1 || r.holdId !== r.id) return undefined;
  await allowances.whenGranted(r.keyId);
  const allowanceId = allowances.takeIfRoom(r.keyId, r.estimatedCost);
  if (allowanceId === null) return undefined;
  let moved: TextRecord | undefined;
  try {
    moved = await repo.moveToAllowance(r, allowanceId, randomUUID());
  } catch (e) {
    // The allowance keeps the estimate counted until then.
    logger.warn({ err: e, request: r.id }, "a refused request could not be moved onto an allowance; parked");
    return "unknown";
  }
  if (!moved) allowances.giveBack(allowanceId, r.estimatedCost, true);
  else logger.info({ request: r.id, allowance: allowanceId }, "hold refused; placed on an allowance of this process instead");
  return moved;
}

/** A request on an allowance names it in its settle or release, so billing records its hold there. */
export function allowanceSpendOf(record: TextRecord): { allowance?: AllowanceSpend } {
  if (record.allowanceId === null) return {};
  return {
    allowance: {
      allowance_id: record.allowanceId,
      key_id: record.keyId,
      reserved_microrub: record.estimatedCost,
      operation: "text",
      model: record.model,
      owner_ref: record.id,
    },
  };
}

/** The release of a closed allowance (its hold id is the allowance's): billing gives back all but the estimates used. */
export function allowanceRelease(allowanceId: string, organizationId: string, used: number): MessagePayload<"billing.hold.release"> {
  return { version: "v1", hold_id: allowanceId, reason: "allowance closed", organization_id: organizationId, used_microrub: used };
}
