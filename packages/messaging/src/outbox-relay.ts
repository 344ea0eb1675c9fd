import type { MessagePayload, RoutingKey } from "@meter/contracts";
import type { Bus } from "./bus";
import { isRoutingKey } from "./catalog";
import { errorMessage, InvalidMessageError } from "./errors";
import { silentLogger, type BusLogger } from "./logger";
import type { OutboxDb, SqlExecutor } from "./outbox-sql";

export interface OutboxRelayOptions {
  db: OutboxDb;
  bus: Pick<Bus, "publish">;
  logger?: BusLogger;
  /** Rows claimed per transaction. Default 100. */
  batchSize?: number;
  /** How long the relay sleeps when the outbox is drained; kick() cuts it short. Default 200 ms. */
  idleMs?: number;
  /** How long a batch waits for a connection, and then for the confirms; the claimed rows stay locked meanwhile. Default 5 s. */
  publishTimeoutMs?: number;
  /** Delay before a row whose publish failed is tried again: n-th failure waits backoffMs[n-1], the last entry repeats. */
  retryBackoffMs?: readonly number[];
  /** Published rows older than this are deleted. Default 7 days. */
  retentionMs?: number;
  /** How often the relay deletes expired rows. Default 1 hour. */
  cleanupIntervalMs?: number;
}

export interface OutboxRelay {
  /** Wakes the relay now; call it after committing a transaction that wrote outbox rows. */
  kick(): void;
  /**
   * Publishes rows a transaction just committed, at once and without claiming them first, then marks
   * them published (concurrent calls share one statement). The writer must have given them an
   * `available_at` at least DIRECT_PUBLISH_LEASE_MS ahead, so the relay's poll leaves them alone
   * meanwhile: a row this fails to publish (or a process that dies first) is taken by the poll once
   * that time has come. Resolves when done; never rejects.
   */
  publishNow(rows: readonly OutboxRow[]): Promise<void>;
  /** Stops the loop after the batch under way is published and marked. */
  stop(): Promise<void>;
}

/** A row of the outbox as the relay publishes it. */
export interface OutboxRow {
  message_id: string;
  routing_key: string;
  /** The payload, as jsonb decoded or its text. */
  payload: unknown;
}

interface ClaimedRow extends OutboxRow {
  attempts: number;
}

/**
 * How far ahead a writer that publishes its rows itself (OutboxRelay.publishNow) sets their
 * `available_at`: the relay's poll takes them only after this, if they are still unpublished.
 */
export const DIRECT_PUBLISH_LEASE_MS = 10_000;

interface FailedRow {
  message_id: string;
  error: string;
  /** null parks the row (available_at = infinity): it can never be published as it stands. */
  delay_ms: number | null;
}

/**
 * The claim: the oldest due rows, each leased to this relay for `$2` ms (available_at moved on) in one
 * statement and a commit of its own, so no transaction stays open while the broker confirms. Another
 * relay skips them meanwhile; a relay that dies before marking them leaves them to be taken again when
 * the lease ends, and consumers absorb that second publish by message id.
 */
const CLAIM_SQL = `
  UPDATE outbox_messages AS o SET available_at = now() + $2::float8 * interval '1 millisecond'
  FROM (
    SELECT id FROM outbox_messages
    WHERE published_at IS NULL AND available_at <= now()
    ORDER BY available_at, id
    LIMIT $1::int
    FOR UPDATE SKIP LOCKED) AS c
  WHERE o.id = c.id
  RETURNING o.message_id::text AS message_id, o.routing_key, o.payload, o.attempts`;

// Ids as a typed array: `= ANY` is read through the unique index on message_id whatever the planner knows
// of the table (no statistics where autovacuum is off), where an IN over a JSON array was planned as a
// hash join over every row the outbox ever held.
// A plain index scan for the claim: it marks the index entries of rows published (dead tuples) as
// killed as it passes them, where the bitmap scan PostgreSQL prefers visits every one of them on every
// poll until a VACUUM (autovacuum is off on some machines): 121 heap pages per poll after 2,000
// published rows, 0 after the first plain scan (docs/benchmarks.md, "Issue 32").
const PLAIN_INDEX_SCAN_SQL = "SET LOCAL enable_bitmapscan = off";

/**
 * Every row of a batch marked published in one statement and one round trip, its commit not waiting for
 * the disk: set_config(..., true) sets synchronous_commit for the statement's own transaction (the
 * one-time filter runs it before any row), where SET LOCAL would need BEGIN and COMMIT around it. A mark
 * lost in a crash publishes those rows again, which consumers absorb by message id.
 */
const MARK_PUBLISHED_SQL = `
  WITH relaxed AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true))
  UPDATE outbox_messages SET published_at = now(), last_error = NULL
  WHERE message_id = ANY ($1::uuid[]) AND published_at IS NULL AND EXISTS (SELECT 1 FROM relaxed)`;

const MARK_FAILED_SQL = `
  UPDATE outbox_messages AS o
  SET attempts = o.attempts + 1,
      last_error = f.error,
      available_at = CASE WHEN f.delay_ms IS NULL THEN 'infinity'::timestamptz
                          ELSE now() + f.delay_ms::float8 * interval '1 millisecond' END
  FROM jsonb_to_recordset($1::jsonb) AS f(message_id uuid, error text, delay_ms bigint)
  WHERE o.message_id = f.message_id`;

const DELETE_CHUNK = 5_000;
const DELETE_EXPIRED_SQL = `
  DELETE FROM outbox_messages WHERE id IN (
    SELECT id FROM outbox_messages
    WHERE published_at < now() - $1::float8 * interval '1 millisecond'
    ORDER BY published_at
    LIMIT ${DELETE_CHUNK}
    FOR UPDATE SKIP LOCKED)`;

const MAX_ERROR_LENGTH = 1_000;
const ERROR_PAUSE_MS = 1_000;

/**
 * Publishes the rows services write to their outbox table. Each batch is claimed with FOR UPDATE SKIP LOCKED
 * and leased to the relay in one committed statement (CLAIM_SQL), published, then marked published in one
 * statement, so relays on several replicas never publish a row twice while its lease runs and no
 * transaction is open while the broker confirms; a crash after the broker's confirm and before the mark
 * publishes it again, which consumers absorb by message id. A writer may also hand its rows to
 * publishNow right after its commit, skipping the claim and the poll's delay.
 */
export function startOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const relay = new Relay(options);
  relay.start();
  return relay;
}

class Relay implements OutboxRelay {
  private readonly db: OutboxDb;
  private readonly bus: Pick<Bus, "publish">;
  private readonly logger: BusLogger;
  private readonly batchSize: number;
  private readonly idleMs: number;
  private readonly publishTimeoutMs: number;
  private readonly retryBackoffMs: readonly number[];
  private readonly retentionMs: number;
  private readonly cleanupIntervalMs: number;
  private stopped = false;
  private kicked = false;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private nextCleanupAt = 0;
  /** Rows published by publishNow, waiting to be marked: concurrent calls share one statement. */
  private marking: { ids: string[]; done: Promise<void> } | undefined;
  private markInFlight: Promise<void> = Promise.resolve();
  private readonly direct = new Set<Promise<void>>();

  constructor(options: OutboxRelayOptions) {
    this.db = options.db;
    this.bus = options.bus;
    this.logger = options.logger ?? silentLogger;
    this.batchSize = options.batchSize ?? 100;
    this.idleMs = options.idleMs ?? 200;
    this.publishTimeoutMs = options.publishTimeoutMs ?? 5_000;
    this.retryBackoffMs = options.retryBackoffMs ?? [1_000, 5_000, 30_000, 60_000];
    this.retentionMs = options.retentionMs ?? 7 * 24 * 3_600_000;
    this.cleanupIntervalMs = options.cleanupIntervalMs ?? 3_600_000;
    if (!Number.isInteger(this.batchSize) || this.batchSize < 1) throw new TypeError("batchSize must be an integer >= 1");
    if (this.retryBackoffMs.length === 0) throw new TypeError("retryBackoffMs must not be empty");
  }

  start(): void {
    this.loop ??= this.run();
  }

  kick(): void {
    this.kicked = true;
    this.wake?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    await Promise.all([...this.direct]);
  }

  publishNow(rows: readonly OutboxRow[]): Promise<void> {
    const work = this.publishDirect(rows);
    this.direct.add(work);
    void work.finally(() => this.direct.delete(work));
    return work;
  }

  private async publishDirect(rows: readonly OutboxRow[]): Promise<void> {
    if (rows.length === 0) return;
    try {
      const failures = await Promise.all(rows.map((row) => this.publish({ ...row, attempts: 0 })));
      const published = rows.filter((_, index) => failures[index] === null).map((row) => row.message_id);
      // A row that failed is left to the poll, which takes it when its lease ends and counts its attempts.
      if (published.length > 0) await this.markPublished(published);
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, "outbox: publishing committed rows at once failed; the relay takes them later");
    }
  }

  /** Marks rows published (MARK_PUBLISHED_SQL); ids that arrive while a mark is under way go together in the next one. */
  private markPublished(ids: readonly string[]): Promise<void> {
    if (!this.marking) {
      const batch: { ids: string[]; done: Promise<void> } = { ids: [], done: Promise.resolve() };
      batch.done = this.markInFlight.then(async () => {
        if (this.marking === batch) this.marking = undefined;
        await this.db.$executeRawUnsafe(MARK_PUBLISHED_SQL, batch.ids);
      });
      this.markInFlight = batch.done.catch(() => undefined);
      this.marking = batch;
    }
    this.marking.ids.push(...ids);
    return this.marking.done;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.kicked = false;
      let claimed = 0;
      let failed = false;
      try {
        claimed = await this.relayBatch();
      } catch (err) {
        failed = true;
        this.logger.error({ err: errorMessage(err) }, "outbox relay batch failed");
      }
      await this.cleanupIfDue();
      if (this.stopped || (claimed >= this.batchSize && !failed) || this.kicked) continue;
      await this.sleep(failed ? Math.max(this.idleMs, ERROR_PAUSE_MS) : this.idleMs);
    }
  }

  private async relayBatch(): Promise<number> {
    const leaseMs = 2 * this.publishTimeoutMs + 15_000;
    // The claim commits at once; the lease, not a lock held across the broker's confirm, keeps the rows
    // this relay's. It need not wait for the disk: a lease lost in a crash only makes the rows due again.
    const rows = await this.db.$transaction(
      async (tx) => {
        await tx.$executeRawUnsafe(PLAIN_INDEX_SCAN_SQL);
        return tx.$queryRawUnsafe<ClaimedRow[]>(CLAIM_SQL, this.batchSize, leaseMs);
      },
      { maxWait: 5_000, timeout: 15_000, synchronousCommit: false },
    );
    if (rows.length === 0) return 0;
    const failures = await Promise.all(rows.map((row) => this.publish(row)));
    const published = rows.filter((_, index) => failures[index] === null).map((row) => row.message_id);
    const failed = failures.filter((failure): failure is FailedRow => failure !== null);
    if (published.length > 0) await this.markPublished(published);
    if (failed.length > 0) await this.db.$executeRawUnsafe(MARK_FAILED_SQL, JSON.stringify(failed));
    this.logger.debug({ published: published.length, failed: failed.length }, "outbox batch relayed");
    return rows.length;
  }

  /** Publishes one row; resolves with what to record if it failed, null if the broker confirmed it. */
  private async publish(row: ClaimedRow): Promise<FailedRow | null> {
    try {
      if (!isRoutingKey(row.routing_key)) throw new InvalidMessageError(row.routing_key, "routing key is not in the message catalog");
      // A driver that does not decode jsonb hands over its text. The bus validates the payload before publishing.
      const payload = (typeof row.payload === "string" ? JSON.parse(row.payload) : row.payload) as MessagePayload<RoutingKey>;
      await this.bus.publish(row.routing_key, payload, { messageId: row.message_id, timeoutMs: this.publishTimeoutMs });
      return null;
    } catch (err) {
      const parked = err instanceof InvalidMessageError || err instanceof SyntaxError;
      const delayMs = this.retryBackoffMs[Math.min(row.attempts, this.retryBackoffMs.length - 1)] ?? ERROR_PAUSE_MS;
      const log = { messageId: row.message_id, routingKey: row.routing_key, attempts: row.attempts + 1, err: errorMessage(err) };
      if (parked) this.logger.error(log, "outbox message is invalid; parked until someone fixes it");
      else this.logger.warn({ ...log, retryInMs: delayMs }, "outbox publish failed; will try again");
      return { message_id: row.message_id, error: errorMessage(err).slice(0, MAX_ERROR_LENGTH), delay_ms: parked ? null : delayMs };
    }
  }

  private async cleanupIfDue(): Promise<void> {
    if (Date.now() < this.nextCleanupAt) return;
    this.nextCleanupAt = Date.now() + this.cleanupIntervalMs;
    try {
      let total = 0;
      for (;;) {
        const deleted = await this.deleteExpired(this.db);
        total += deleted;
        if (deleted < DELETE_CHUNK || this.stopped) break;
      }
      if (total > 0) this.logger.info({ deleted: total }, "deleted published outbox rows past retention");
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, "outbox cleanup failed");
    }
  }

  private async deleteExpired(db: SqlExecutor): Promise<number> {
    return db.$executeRawUnsafe(DELETE_EXPIRED_SQL, this.retentionMs);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }
}
