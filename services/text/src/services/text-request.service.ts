import type { Allocator } from "@meter/allowances";
import type { Hold, KeyIdentity } from "@meter/contracts";
import { Refused } from "@meter/hold-client";
import type { BillingClient } from "@meter/service-clients";
import { fingerprintOf, idempotencyRecordId, requireIdempotencyKey, type Logger } from "@meter/service-kit";
import type { NewTextRecord, TextEndpoint, TextRecord } from "../domain/text-record";
import { TextErrors } from "../errors";
import type { UpstreamKeys } from "@meter/upstreams";
import type { TextRequestRepository } from "../repositories/text-request.repository";
import { claimOnAllowance } from "../domain/allowance-rule";
import { planText, type CatalogView, type NormalizedText } from "./text-plan";
import type { TextRunner } from "./text-runner";

export interface TextRequestDeps {
  repo: Pick<TextRequestRepository, "claim">;
  runner: Pick<TextRunner, "drive" | "isActive" | "place">;
  billing: Pick<BillingClient, "release">;
  /** This process's allowances; none when ALLOWANCES=off (every request places its own hold in billing). */
  allowances?: Pick<Allocator, "take" | "giveBack">;
  catalog: CatalogView;
  keys: UpstreamKeys;
  workerId: string;
  syncTimeoutMs: number;
  /** How long a new record is left to its request before a reconciler may take it up. */
  leaseMs: number;
  logger: Logger;
}

/** What became of a request, for the HTTP layer to render: final, or still pending. */
export interface TextOutcome {
  record: TextRecord;
  /** The answer of an earlier request with the same key and body. */
  replayed: boolean;
}

/**
 * Accepting a paid text request: validate and price it (refusals here reserve nothing), then claim its
 * idempotency key with its hold placed on an allowance of the key in the same commit, when this process
 * has one with room (docs/api.md, "Allowances"); otherwise claim it and place its own hold in billing at
 * the same time (the hold's id is the claim's, so both are idempotent). Then the runner calls the
 * upstream and commits the outcome, waited for at most the synchronous window. A key already used
 * replays the stored answer; the same key with another body is refused.
 */
export class TextRequestService {
  constructor(private readonly deps: TextRequestDeps) {}

  async handle(input: {
    identity: KeyIdentity;
    requestId: string;
    endpoint: TextEndpoint;
    idempotencyKey: string | undefined;
    body: unknown;
    text: NormalizedText;
    model: string;
  }): Promise<TextOutcome> {
    const key = requireIdempotencyKey(input.idempotencyKey);

    const fingerprint = fingerprintOf(input.body);
    const plan = planText(input.endpoint, this.deps.catalog, input.model, input.text, this.deps.keys);
    const id = idempotencyRecordId("text-request", input.identity.key_id, input.endpoint, key);
    const now = new Date();
    const record: NewTextRecord = {
      id,
      holdId: id,
      allowanceId: null,
      keyId: input.identity.key_id,
      userId: input.identity.user_id,
      organizationId: input.identity.organization_id,
      endpoint: input.endpoint,
      operation: "text",
      idempotencyKey: key,
      requestId: input.requestId,
      fingerprint,
      model: input.model,
      plan,
      estimatedCost: plan.estimatedCost,
      attempts: 1,
      ownerId: this.deps.workerId,
      nextAttemptAt: new Date(now.getTime() + this.deps.leaseMs),
      createdAt: now,
    };

    const onAllowance = this.deps.allowances ? await claimOnAllowance(this.deps.allowances, this.deps.repo, record) : undefined;
    if (onAllowance) return this.proceed(onAllowance, fingerprint, undefined);

    const placement: Promise<Hold> = this.deps.runner.place(record);
    // Observed by the runner, or not at all (a duplicate): never an unhandled rejection.
    placement.catch(() => undefined);
    const claimed = await this.deps.repo.claim(record);
    if ("allowanceClosed" in claimed) throw new Error("a claim without an allowance was refused for one");
    if (!claimed.created && claimed.record.holdId !== id) {
      // The request holding the key has its hold under another id (an allowance's, or a fresh one):
      // the hold this duplicate may just have placed under the record's id is nobody's, so it goes now.
      this.deps.billing
        .release(id, "a duplicate's placement; the request holds another hold", record.organizationId)
        .catch((e: unknown) => this.deps.logger.warn({ err: e, request: id }, "a duplicate's hold could not be released; the hold audit will"));
    }
    return this.proceed(claimed, fingerprint, placement);
  }

  private async proceed(claimed: { record: TextRecord; created: boolean }, fingerprint: string, placement: Promise<Hold> | undefined): Promise<TextOutcome> {
    const { record, created } = claimed;
    if (!created) {
      // A duplicate: its placement was of the first request's own hold (a no-op), or is released by
      // that request's runner if it reached billing first with another amount.
      if (record.fingerprint !== fingerprint) throw TextErrors.idempotencyMismatch();
      return { record: await this.awaitExisting(record), replayed: true };
    }
    return { record: await this.wait(this.deps.runner.drive(record, placement ? { placement } : {}), record), replayed: false };
  }

  /** A retry of a request: its stored answer, or its progress if it is still under way. */
  private async awaitExisting(record: TextRecord): Promise<TextRecord> {
    if (record.state !== "reserving") return record;
    if (this.deps.runner.isActive(record.id)) return this.wait(this.deps.runner.drive(record), record);
    return record;
  }

  private async wait(drive: Promise<TextRecord>, record: TextRecord): Promise<TextRecord> {
    let timer: NodeJS.Timeout | undefined;
    const window = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), this.deps.syncTimeoutMs);
    });
    try {
      const outcome = await Promise.race([drive, window]);
      // Past the window the work goes on; the client comes back with the same key for the result.
      return outcome === "timeout" ? record : outcome;
    } catch (e) {
      if (e instanceof Refused) throw e.error;
      // Something broke mid-way (e.g. our database): money may be held, so this is pending, never an
      // error; a later attempt finishes the record.
      this.deps.logger.error({ err: e, request: record.id }, "text request interrupted; left to the reconciler");
      return record;
    } finally {
      clearTimeout(timer);
    }
  }
}
