import type { Pool } from "pg";
import type { Lease } from "../domain/lease";

/**
 * The organization-wide slots of running tool calls, shared by every MCP process through the database.
 * Expiry is on the database's clock, so processes on machines with drifting clocks agree.
 */
export class LeaseRepository {
  constructor(private readonly pool: Pool) {}

  /**
   * Takes a slot when fewer than `max` unexpired leases of the organization exist; false otherwise.
   * The count and the insert run under a transaction-scoped advisory lock of the organization: two
   * processes taking its last slot at once are serialized, and the insert's statement, started after
   * the lock was granted, sees every lease committed before it.
   */
  async tryAcquire(lease: Lease, max: number, ttlMs: number): Promise<boolean> {
    const client = await this.pool.connect();
    let usable = true;
    try {
      await client.query("BEGIN");
      await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`mcp.tool_call_leases:${lease.organizationId}`]);
      // Expired leases are the slots of calls whose process died; they no longer count and are cleared here.
      await client.query("DELETE FROM tool_call_leases WHERE organization_id = $1 AND expires_at <= now()", [lease.organizationId]);
      const inserted = await client.query(
        `INSERT INTO tool_call_leases (id, organization_id, process_id, tool, expires_at)
         SELECT $1, $2, $3, $4, now() + make_interval(secs => $5::double precision / 1000)
         WHERE (SELECT count(*) FROM tool_call_leases WHERE organization_id = $2 AND expires_at > now()) < $6
         RETURNING id`,
        [lease.id, lease.organizationId, lease.processId, lease.tool, ttlMs, max],
      );
      await client.query("COMMIT");
      return (inserted.rowCount ?? 0) > 0;
    } catch (e) {
      // A connection that cannot even roll back is broken: it leaves the pool instead of going back to it.
      usable = await client.query("ROLLBACK").then(
        () => true,
        () => false,
      );
      throw e;
    } finally {
      client.release(!usable);
    }
  }

  /** Pushes the expiry forward; false when the lease is gone (it expired and another call cleared it). */
  async renew(id: string, ttlMs: number): Promise<boolean> {
    const res = await this.pool.query("UPDATE tool_call_leases SET expires_at = now() + make_interval(secs => $2::double precision / 1000) WHERE id = $1", [
      id,
      ttlMs,
    ]);
    return (res.rowCount ?? 0) > 0;
  }

  async release(id: string): Promise<void> {
    await this.pool.query("DELETE FROM tool_call_leases WHERE id = $1", [id]);
  }
}
