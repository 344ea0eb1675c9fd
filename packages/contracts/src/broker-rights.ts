import { CommandQueues, MessageProducers, type RoutingKey } from "./messages";
import type { Deployable } from "./services";

/** The bus's exchanges (packages/messaging's topology): every message goes to `meter`; `meter.unrouted` catches what no queue takes. */
export const BusExchanges = { main: "meter", unrouted: "meter.unrouted" } as const;
const EXCHANGE = BusExchanges.main;
const UNROUTED_EXCHANGE = BusExchanges.unrouted;

/**
 * The deployable that owns the bus topology: it alone declares (configures) the exchanges `meter` and
 * `meter.unrouted` and the unrouted queue; every other deployable checks they exist by passive
 * declarations, which need no right, and waits for them (packages/messaging, BusOptions.topology).
 */
export const TOPOLOGY_OWNER = "billing-ledger" satisfies Deployable;

/**
 * What each deployable's broker user may do on the vhost: RabbitMQ's configure / write / read regexes
 * (matched against exchange and queue names alike; the default exchange is `amq.default`) and topic
 * permissions on the `meter` exchange (routing keys it may publish, and bind its queues to). Each is
 * exactly what the process does (packages/messaging: topology.ts, consumer.ts): the topology's owner
 * declares the exchanges and the unrouted queue (and moves a classic unrouted queue of an earlier release
 * to a quorum one); a consumer declares its queue, delay queues, dead-letter queue and moves exchange, binds
 * and reads it, and moves copies through its moves exchange. Each queue and exchange is declared by its
 * owner only: nobody else may delete, redeclare or purge it. A publisher of commands publishes to `meter`
 * and has no right on their queue (it only waits, by passive declarations, for the consumer to have
 * declared it: Bus.requireQueue). mcp uses no bus and has no user.
 */
export interface BrokerRights {
  configure: string;
  write: string;
  read: string;
  /** Routing keys it may publish to `meter`. */
  topicWrite: string;
  /** Routing keys it may bind a queue to on `meter`. */
  topicRead: string;
}

export type BusDeployable = Exclude<Deployable, "mcp">;
export const BUS_DEPLOYABLES: readonly BusDeployable[] = ["gateway", "text", "media-jobs", "media-jobs-worker", "files", "files-worker", "billing-ledger"];

/** The broker user a deployable connects as. */
export function brokerUserName(deployable: BusDeployable): string {
  return `meter-${deployable}`;
}

/** A regex nothing but the empty name matches: RabbitMQ's way of granting nothing. */
const NOTHING = "^$";

interface Role {
  /** Durable queues it consumes, with their delay and dead-letter queues. */
  consumes: readonly QueueOf[];
  /** Prefixes of its exclusive queues (`<prefix>.<random>` or deeper). */
  exclusive: readonly string[];
}

type QueueOf = { queue: string; routingKeys: readonly RoutingKey[] };

const CATALOG_CHANGED: QueueOf = { queue: "", routingKeys: ["billing.catalog.changed"] };
const KEY_REVOKED: QueueOf = { queue: "", routingKeys: ["billing.key.revoked"] };

const ROLES: Record<BusDeployable, Role & { exclusiveKeys: readonly QueueOf[] }> = {
  gateway: { consumes: [], exclusive: ["gateway.key-revoked", "gateway.catalog-changed"], exclusiveKeys: [KEY_REVOKED, CATALOG_CHANGED] },
  text: { consumes: [], exclusive: ["text.catalog-changed"], exclusiveKeys: [CATALOG_CHANGED] },
  "media-jobs": { consumes: [], exclusive: ["media-jobs.catalog-changed"], exclusiveKeys: [CATALOG_CHANGED] },
  "media-jobs-worker": { consumes: [CommandQueues.mediaJobs], exclusive: [], exclusiveKeys: [] },
  files: { consumes: [], exclusive: [], exclusiveKeys: [] },
  "files-worker": { consumes: [CommandQueues.filesVerification], exclusive: [], exclusiveKeys: [] },
  "billing-ledger": { consumes: [CommandQueues.billingHoldCommands], exclusive: [], exclusiveKeys: [] },
};

const escape = (name: string) => name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const anyOf = (patterns: readonly string[]) => (patterns.length === 0 ? NOTHING : `^(${[...new Set(patterns)].join("|")})$`);
/**
 * A consumer's queue, dead-letter and delay queues, moves exchange, and the holding queues
 * (`<name>.moving`) through which it moves a classic queue of an earlier release to a quorum queue:
 * reading its dead-letter queue is needed only to empty it into one.
 */
const ownQueues = (q: string) => `${q}((\\.dlq|\\.delay\\.[0-9]+)?(\\.moving)?|\\.moves)`;
const keysOf = (queues: readonly QueueOf[]) => queues.flatMap((q) => q.routingKeys);

export function brokerRights(deployable: BusDeployable): BrokerRights {
  const role = ROLES[deployable];
  const consumed = role.consumes.map((q) => escape(q.queue));
  const exclusive = role.exclusive.map((prefix) => `${escape(prefix)}\\..+`);
  // The owner's: the exchanges, the unrouted exchange and queue, and the unrouted queue's holding queue
  // while a classic one of an earlier release moves to a quorum one (`meter.unrouted(.moving)`).
  const owns = deployable === TOPOLOGY_OWNER;
  const unrouted = `${escape(UNROUTED_EXCHANGE)}(\\.moving)?`;
  const topology = owns ? [escape(EXCHANGE), unrouted] : [];
  const publishes = (Object.keys(MessageProducers) as RoutingKey[]).filter((key) => (MessageProducers[key] as readonly Deployable[]).includes(deployable));
  const bindsKeys = [...keysOf(role.consumes), ...keysOf(role.exclusiveKeys)];
  return {
    configure: anyOf([...topology, ...consumed.map((q) => ownQueues(q)), ...exclusive]),
    // Binding needs write on the queue; publishing, write on the exchange; declaring `meter`, write on its
    // alternate exchange; moving a copy (and declaring a delay queue that dead-letters), write on the
    // consumer's own moves exchange (the unrouted queue's move: on its fanout exchange). Never the default
    // exchange, which reaches every queue by name.
    write: anyOf([...(owns ? [unrouted] : []), ...(publishes.length > 0 ? [escape(EXCHANGE)] : []), ...consumed.map((q) => ownQueues(q)), ...exclusive]),
    // Binding needs read on the exchange (`meter`, a moves exchange), and so does declaring `meter` with its
    // alternate exchange; consuming (and moving messages out of a queue) needs read on the queue, and
    // declaring a delay queue (it dead-letters) read on it. A process that binds nothing reads nothing.
    read: anyOf([...topology, ...(bindsKeys.length > 0 ? [escape(EXCHANGE)] : []), ...consumed.map((q) => ownQueues(q)), ...exclusive]),
    topicWrite: anyOf(publishes.map(escape)),
    topicRead: anyOf(bindsKeys.map(escape)),
  };
}
