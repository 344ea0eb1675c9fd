import { createHash, randomUUID } from "node:crypto";
import type { KeyIdentity } from "@meter/contracts";
import type { CatalogCache } from "../adapters/catalog-cache";
import { TextErrors } from "../errors";
import type { TextRecord, TextRequestRepository } from "../repositories/text-request.repository";
import { renderPending, renderRecord, type HttpAnswer } from "../render/text.render";
import { planText, type NormalizedText, type TextEndpoint } from "./text-plan";
import { Refused, type TextRunner } from "./text-runner";
import type { Logger } from "@meter/service-kit";

/** Printable ASCII, as Stripe-style idempotency keys are. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

export interface TextRequestDeps {
  repo: TextRequestRepository;
  runner: TextRunner;
  catalog: CatalogCache;
  workerId: string;
  syncTimeoutMs: number;
  env: NodeJS.ProcessEnv;
  logger: Logger;
}

/**
 * Accepting a paid text request: validate and price it (refusals here reserve nothing), claim its
 * idempotency key, then let the runner reserve, call and settle, waiting at most the synchronous window.
 * A key already used replays the stored answer; the same key with another body is refused.
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
  }): Promise<HttpAnswer> {
    const key = input.idempotencyKey;
    if (key === undefined || key === "") throw TextErrors.idempotencyKeyRequired();
    if (!IDEMPOTENCY_KEY.test(key)) throw TextErrors.badIdempotencyKey();

    const fingerprint = fingerprintOf(input.body);
    const plan = planText(input.endpoint, this.deps.catalog.get(input.model), input.model, input.text, this.deps.env);
    const { record, created } = await this.deps.repo.claim({
      id: randomUUID(),
      holdId: randomUUID(),
      keyId: input.identity.key_id,
      userId: input.identity.user_id,
      organizationId: input.identity.organization_id,
      endpoint: input.endpoint,
      idempotencyKey: key,
      requestId: input.requestId,
      fingerprint,
      model: input.model,
      plan,
      estimatedCost: plan.estimatedCost,
      ownerId: this.deps.workerId,
    });

    if (!created) {
      if (record.fingerprint !== fingerprint) throw TextErrors.idempotencyMismatch();
      return replayed(await this.awaitExisting(record));
    }
    return this.wait(this.deps.runner.drive(record, { firstAttempt: true }), record);
  }

  /** A retry of a request: its stored answer, or its progress if it is still under way. */
  private async awaitExisting(record: TextRecord): Promise<HttpAnswer> {
    const justCompleted = this.deps.runner.justCompleted(record.id);
    if (justCompleted) return renderRecord(justCompleted);
    if (record.state === "completed" || record.state === "failed") return renderRecord(record);
    if (this.deps.runner.isActive(record.id)) return this.wait(this.deps.runner.drive(record), record);
    return renderPending(record);
  }

  private async wait(drive: Promise<TextRecord>, record: TextRecord): Promise<HttpAnswer> {
    let timer: NodeJS.Timeout | undefined;
    const window = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), this.deps.syncTimeoutMs);
    });
    try {
      const outcome = await Promise.race([drive, window]);
      // Past the window the work goes on; the client comes back with the same key for the result.
      return renderRecord(outcome === "timeout" ? record : outcome);
    } catch (e) {
      if (e instanceof Refused) throw e.error;
      // Something broke mid-way (e.g. our database): money may be held, so this is pending, never an
      // error; the reconciler finishes the record.
      this.deps.logger.error({ err: e, request: record.id }, "text request interrupted; left to the reconciler");
      return renderPending({ ...record, attempts: record.attempts + 1 });
    } finally {
      clearTimeout(timer);
    }
  }
}

function replayed(answer: HttpAnswer): HttpAnswer {
  return { ...answer, headers: { ...answer.headers, "idempotent-replayed": "true" } };
}

/** The body's identity for idempotency: canonical JSON (keys sorted), so formatting does not matter. */
export function fingerprintOf(body: unknown): string {
  return createHash("sha256").update(canonicalJson(body)).digest("hex");
}

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v && typeof v === "object") {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(",")}}`;
  }
  return JSON.stringify(v);
}
