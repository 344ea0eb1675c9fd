import type { Pool } from "pg";
import type { AllowanceKey, AllowanceStore } from "@meter/allowances";
import { toMicrorub } from "@meter/contracts";
import { writeOutboxMessage } from "@meter/messaging";
import { rawSqlOf } from "@meter/service-kit";
import { allowanceRelease } from "../domain/allowance-rule";

/**
 * The `allowances` table (docs/api.md, "Allowances"). Each row is owned by one process, which places
 * requests on it in their claims' commits (TextRequestRepository.claim); here are its other moves.
 * Closing is two steps: `closing` stops new requests (the claim locks the row and checks it is open),
 * then one transaction makes every closing allowance with no request still reserving on it `closed`,
 * writing its release with the estimates used, so billing hears of the close only after the
 * settlements and releases of every request on it are in the outbox.
 */
export class AllowanceRepository implements AllowanceStore {
  constructor(
    private readonly pool: Pool,
    private readonly ownerId: string,
    /** Wakes the outbox relay after a close committed its release. */
    private readonly onOutbox: () => void,
  ) {}

  async begin(a: { id: string } & AllowanceKey): Promise<void> {
    await this.pool.query("INSERT INTO allowances (id, key_id, organization_id, owner_id, state) VALUES ($1, $2, $3, $4, 'granting')", [
      a.id,
      a.keyId,
      a.organizationId,
      this.ownerId,
    ]);
  }

  async open(id: string, granted: number, usableUntil: Date, grantSignature: string | null): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE allowances SET state = 'open', granted = $3, usable_until = $4, grant_signature = $5, last_used_at = now()
       WHERE id = $1 AND owner_id = $2 AND state = 'granting'`,
      [id, this.ownerId, granted, usableUntil, grantSignature],
    );
    return rowCount === 1;
  }

  async refused(id: string): Promise<void> {
    await this.pool.query("UPDATE allowances SET state = 'closed', closed_at = now() WHERE id = $1 AND state = 'granting'", [id]);
  }

  async closing(ids: readonly string[]): Promise<void> {
    await this.pool.query("UPDATE allowances SET state = 'closing' WHERE id = ANY($1::uuid[]) AND owner_id = $2 AND state IN ('granting', 'open')", [
      ids,
      this.ownerId,
    ]);
  }

  async closingAll(): Promise<void> {
    await this.pool.query("UPDATE allowances SET state = 'closing' WHERE owner_id = $1 AND state IN ('granting', 'open')", [this.ownerId]);
  }

  /**
   * The allowances of processes whose heartbeat stopped (or that retired) become closing, whatever
   * their state: their requests are taken over by the reconciler and finished, then they close.
   */
  async closingOfStale(staleMs: number): Promise<number> {
    const { rowCount } = await this.pool.query(
      `UPDATE allowances a SET state = 'closing'
       WHERE a.state IN ('granting', 'open') AND a.owner_id <> $1
         AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = a.owner_id AND w.heartbeat_at >= now() - $2::float8 * interval '1 millisecond')`,
      [this.ownerId, staleMs],
    );
    return rowCount ?? 0;
  }

  /**
   * Closes them in one transaction with their releases, each built and checked through the message
   * catalog (writeOutboxMessage), so a release billing cannot parse is never committed.
   */
  async closeSettled(): Promise<string[]> {
    const closed = await rawSqlOf(this.pool).$transaction(async (tx) => {
      const rows = await tx.$queryRawUnsafe<{ id: string; organization_id: string; used: string }[]>(
        `UPDATE allowances a SET state = 'closed', closed_at = now()
         WHERE a.state = 'closing'
           AND NOT EXISTS (SELECT 1 FROM text_requests t WHERE t.allowance_id = a.id AND t.state = 'reserving')
         RETURNING a.id, a.organization_id, a.used`,
      );
      for (const r of rows)
        await writeOutboxMessage(tx, "billing.hold.release", allowanceRelease(r.id, r.organization_id, toMicrorub(r.used)), { messageId: r.id });
      return rows.map((r) => r.id);
    });
    if (closed.length > 0) this.onOutbox();
    return closed;
  }

  /**
   * Allowances billing-ledger has no open record of (its books cross-check found requests on them):
   * closing, whichever process holds them, so no claim places a request on them again; closed as any
   * closing allowance is. Returns the ids that were still open or granting.
   */
  async closeUnknown(ids: readonly string[]): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>(
      "UPDATE allowances SET state = 'closing' WHERE id = ANY($1::uuid[]) AND state IN ('granting', 'open') RETURNING id",
      [ids],
    );
    return rows.map((r) => r.id);
  }

  /** The allowances among `ids` this service has a record of, with the estimates used on those it closed. */
  async existing(ids: readonly string[]): Promise<{ id: string; closedWith: number | null }[]> {
    const { rows } = await this.pool.query<{ id: string; closed_with: string | null }>(
      "SELECT id, CASE WHEN state = 'closed' THEN used END AS closed_with FROM allowances WHERE id = ANY($1::uuid[])",
      [ids],
    );
    return rows.map((r) => ({ id: r.id, closedWith: r.closed_with === null ? null : toMicrorub(r.closed_with) }));
  }

  /** Closed allowances past the idempotency retention (their requests' records go at the same age). */
  async purge(retentionMs: number): Promise<number> {
    const { rowCount } = await this.pool.query("DELETE FROM allowances WHERE state = 'closed' AND closed_at < now() - $1::float8 * interval '1 millisecond'", [
      retentionMs,
    ]);
    return rowCount ?? 0;
  }
}
