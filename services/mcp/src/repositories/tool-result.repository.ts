import { randomUUID } from "node:crypto";
import type { Pool } from "pg";
import type { ResultStore, ResultToStore } from "../domain/stored-result";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Oversized tool results in the service's own database, kept `ttlMs` (expiry on the database's clock). */
export class ToolResultRepository implements ResultStore {
  constructor(
    private readonly pool: Pool,
    private readonly ttlMs: number,
  ) {}

  async save(result: ResultToStore): Promise<string> {
    // Expired rows are cleared here: oversized results are rare, so this costs little and needs no sweeper.
    await this.pool.query("DELETE FROM tool_results WHERE expires_at <= now()");
    const res = await this.pool.query<{ id: string }>(
      `INSERT INTO tool_results (id, key_id, organization_id, tool, idempotency_key, content, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7::double precision / 1000))
       ON CONFLICT (key_id, tool, idempotency_key) DO UPDATE SET content = EXCLUDED.content, expires_at = EXCLUDED.expires_at
       RETURNING id`,
      [randomUUID(), result.owner.keyId, result.owner.organizationId, result.tool, result.idempotencyKey ?? null, result.content, this.ttlMs],
    );
    return res.rows[0]!.id;
  }

  async find(id: string, keyId: string): Promise<string | undefined> {
    if (!UUID.test(id)) return undefined;
    const res = await this.pool.query<{ content: string }>("SELECT content FROM tool_results WHERE id = $1 AND key_id = $2 AND expires_at > now()", [
      id,
      keyId,
    ]);
    return res.rows[0]?.content;
  }
}
