import { Client } from "pg";
import type { Logger } from "@meter/service-kit";
import type { UploadLock, UploadLocks } from "./upload-locks";

const LOCK_SQL = "SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked";
const UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtextextended($1, 0))";

/**
 * PostgreSQL frees a session's locks when it sees the session's socket close, which a process that
 * dies does at once. A host that vanishes sends nothing, so the server probes the socket itself: with
 * these it gives up on a silent peer after ~20 s instead of the operating system's two hours.
 */
const KEEPALIVE_SQL = "SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 2";

interface Session {
  client: Client;
  alive: boolean;
}

interface Held {
  controller: AbortController;
  session?: Session;
}

/**
 * Upload locks as PostgreSQL session-level advisory locks, all on one connection of this process
 * (not the pool: a pooled connection outlives the work that took a lock on it). Needs a direct
 * session to the server: a transaction-mode pooler (PgBouncer) in between would break them.
 */
export class PgUploadLocks implements UploadLocks {
  private session: Promise<Session> | undefined;
  private current: Session | undefined;
  /** Locks of this process, by file: a session lock is re-entrant, so a second taker here must be told no by us. */
  private readonly held = new Map<string, Held>();

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
  ) {}

  async tryAcquire(fileId: string): Promise<UploadLock | undefined> {
    if (this.held.has(fileId)) return undefined;
    const entry: Held = { controller: new AbortController() };
    // Reserved before the first await, so a concurrent call in this process finds it.
    this.held.set(fileId, entry);
    try {
      const session = await this.connect();
      const { rows } = await session.client.query<{ locked: boolean }>(LOCK_SQL, [lockKey(fileId)]);
      if (rows[0]?.locked !== true) {
        this.held.delete(fileId);
        return undefined;
      }
      entry.session = session;
      // The session may have died between the answer and here; then so did the lock.
      if (!session.alive) entry.controller.abort(new Error("the upload lock's database session ended"));
    } catch (error) {
      this.held.delete(fileId);
      throw error;
    }
    return { lost: entry.controller.signal, release: () => this.release(fileId, entry) };
  }

  async close(): Promise<void> {
    const session = await this.session?.catch(() => undefined);
    this.session = undefined;
    this.current = undefined;
    if (session?.alive) {
      session.alive = false;
      await session.client.end().catch(() => undefined);
    }
  }

  private async release(fileId: string, entry: Held): Promise<void> {
    if (this.held.get(fileId) === entry) this.held.delete(fileId);
    const session = entry.session;
    // A lock whose session ended is already free.
    if (!session?.alive) return;
    try {
      await session.client.query(UNLOCK_SQL, [lockKey(fileId)]);
    } catch (error) {
      this.logger.warn({ err: error, file_id: fileId }, "could not release an upload lock; it goes with its session");
    }
  }

  private connect(): Promise<Session> {
    this.session ??= this.open().catch((error: unknown) => {
      this.session = undefined;
      throw error;
    });
    return this.session;
  }

  private async open(): Promise<Session> {
    const client = new Client({ connectionString: this.url, application_name: "files-upload-locks", keepAlive: true });
    const session: Session = { client, alive: true };
    this.current = session;
    client.on("error", (error) => this.lose(session, error));
    client.on("end", () => this.lose(session, new Error("connection closed")));
    await client.connect();
    await client.query(KEEPALIVE_SQL);
    return session;
  }

  /** The session ended: its locks are gone, so every upload streaming under one must stop. */
  private lose(session: Session, cause: Error): void {
    if (!session.alive) return;
    session.alive = false;
    if (this.current === session) {
      this.current = undefined;
      this.session = undefined;
    }
    let lost = 0;
    for (const entry of this.held.values()) {
      if (entry.session !== session) continue;
      entry.controller.abort(new Error("the upload lock's database session ended", { cause }));
      lost++;
    }
    this.logger.warn({ err: cause, lost }, "upload lock session ended");
    session.client.end().catch(() => undefined);
  }
}

function lockKey(fileId: string): string {
  return `files.upload:${fileId}`;
}
