import { z } from "zod";
import { AllowanceSpend } from "./billing";
import { Microrub } from "./money";
import { RequestLogFields } from "./request-log";
import type { Deployable } from "./services";

/**
 * The message catalog: every routing key on the bus and the payload it carries. Publishers and
 * consumers both go through it, so a payload is validated at each boundary. Every payload has
 * `version: "v1"` so a later shape can live beside it.
 */
const V1 = z.literal("v1");

export const MessageCatalog = {
  /** A command: settle a hold for the given amount. Idempotent; handed off durably through an outbox. */
  "billing.hold.settle": z.object({
    version: V1,
    hold_id: z.uuid(),
    amount_microrub: Microrub,
    /** The organization of the hold's key (absent only on commands written before it was added). */
    organization_id: z.uuid().optional(),
    /** A request's hold placed locally against an allowance. */
    allowance: AllowanceSpend.optional(),
    /** The request's entry in the request log, written with the settlement. */
    log: RequestLogFields.optional(),
  }),
  /** A command: release a hold, charging nothing. Idempotent. */
  "billing.hold.release": z.object({
    version: V1,
    hold_id: z.uuid(),
    reason: z.string().min(1).max(200),
    /**
     * The organization the hold's key belongs to: a release of a hold billing never saw records its id
     * under it (docs/api.md, "Holds"; absent only on commands written before this field).
     */
    organization_id: z.uuid().optional(),
    /** A request's hold placed locally against an allowance. */
    allowance: AllowanceSpend.optional(),
    /** Closing an allowance (hold_id is the allowance): the estimates of every request placed on it. */
    used_microrub: Microrub.optional(),
    /** The request's entry in the request log, written with the release. */
    log: RequestLogFields.optional(),
  }),
  /** An event: a key was revoked; gateways drop it from their caches at once. */
  "billing.key.revoked": z.object({ version: V1, key_id: z.uuid() }),
  /** An event: a key's expires_at passed and billing closed it (its allowances called back). */
  "billing.key.expired": z.object({ version: V1, key_id: z.uuid(), expired_at: z.string() }),
  /** An event: a catalog entry changed; services refresh their copy. */
  "billing.catalog.changed": z.object({ version: V1, model_id: z.string() }),
  /** A command to the files worker: verify an uploaded file. */
  "files.upload.completed": z.object({ version: V1, file_id: z.uuid() }),
  /** A command to the media-jobs workers: run a queued job. Idempotent (a job runs once whatever arrives). */
  "media.job.requested": z.object({ version: V1, job_id: z.uuid() }),
} as const;

export type MessageCatalog = typeof MessageCatalog;
export type RoutingKey = keyof MessageCatalog;
export type MessagePayload<K extends RoutingKey> = z.infer<MessageCatalog[K]>;

/**
 * Who may publish each routing key. Every message is signed by the deployable that published it, and a
 * consumer dead-letters one signed by anyone not named here. A service's API process and its worker
 * share one outbox table, and either one's relay may publish a row the other wrote, so both are named.
 */
export const MessageProducers = {
  // Text and media jobs resolve the holds they placed; the media worker finishes jobs, and so holds.
  "billing.hold.settle": ["text", "media-jobs", "media-jobs-worker"],
  "billing.hold.release": ["text", "media-jobs", "media-jobs-worker"],
  "billing.key.revoked": ["billing-ledger"],
  "billing.key.expired": ["billing-ledger"],
  "billing.catalog.changed": ["billing-ledger"],
  // The API process on completion; the worker's sweeper re-sends a verification that got stuck.
  "files.upload.completed": ["files", "files-worker"],
  // The API process on admission; the worker's reconciler announces a job again.
  "media.job.requested": ["media-jobs", "media-jobs-worker"],
} as const satisfies Record<RoutingKey, readonly Deployable[]>;

export function mayPublish(producer: Deployable, routingKey: RoutingKey): boolean {
  return (MessageProducers[routingKey] as readonly Deployable[]).includes(producer);
}

/**
 * Queues whose messages are commands: the publisher declares them too, so a command sent before its
 * consumer ever ran waits in the queue instead of being unroutable.
 */
export const CommandQueues = {
  billingHoldCommands: {
    queue: "billing-ledger.hold-commands",
    consumer: "billing-ledger",
    routingKeys: ["billing.hold.settle", "billing.hold.release"] as const satisfies readonly RoutingKey[],
  },
  filesVerification: {
    queue: "files.verification",
    consumer: "files-worker",
    routingKeys: ["files.upload.completed"] as const satisfies readonly RoutingKey[],
  },
  mediaJobs: {
    queue: "media-jobs.jobs",
    consumer: "media-jobs-worker",
    routingKeys: ["media.job.requested"] as const satisfies readonly RoutingKey[],
  },
} as const satisfies Record<string, { queue: string; consumer: Deployable; routingKeys: readonly RoutingKey[] }>;

/**
 * The one deployable that consumes a command (its queue's owner), or undefined for an event, which any
 * number of deployables may hear. A command can therefore be sealed for its one reader (a MAC under the
 * producer -> consumer pair key) instead of signed for everyone (packages/messaging, message-signature.ts).
 */
export function commandConsumer(routingKey: RoutingKey): Deployable | undefined {
  for (const q of Object.values(CommandQueues)) if ((q.routingKeys as readonly RoutingKey[]).includes(routingKey)) return q.consumer;
  return undefined;
}
