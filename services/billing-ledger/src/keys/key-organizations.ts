import type { Pool } from "pg";

/**
 * The organization of a key, for splitting work by organization (docs/scale.md). A key's organization
 * never changes, so it is remembered; the first sight of a key costs a read of the reference table
 * `api_key_hashes` (or of `api_keys`, for a key an older release made without a row there).
 */
export class KeyOrganizations {
  private readonly known = new Map<string, string>();

  constructor(
    private readonly pool: Pool,
    /** How many keys' organizations are remembered; past it the memory starts over. */
    private readonly remembered = 100_000,
  ) {}

  /** Each key's organization (lower-case ids); a key billing does not have is absent. */
  async of(keyIds: readonly string[]): Promise<Map<string, string>> {
    const ids = [...new Set(keyIds.map((id) => id.toLowerCase()))];
    const found = new Map(ids.flatMap((id) => (this.known.has(id) ? [[id, this.known.get(id)!] as const] : [])));
    // Answered from what this call found, not from the memory, which learning may start over.
    for (const r of await this.learn(ids.filter((id) => !found.has(id)))) found.set(r.key_id, r.organization_id);
    return found;
  }

  private async learn(ids: readonly string[]): Promise<{ key_id: string; organization_id: string }[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.pool.query<{ key_id: string; organization_id: string }>(
      "SELECT key_id, organization_id FROM api_key_hashes WHERE key_id = ANY ($1::uuid[])",
      [ids],
    );
    const missing = ids.filter((id) => !rows.some((r) => r.key_id === id));
    if (missing.length > 0) {
      const older = await this.pool.query<{ key_id: string; organization_id: string }>(
        "SELECT id AS key_id, organization_id FROM api_keys WHERE id = ANY ($1::uuid[])",
        [missing],
      );
      rows.push(...older.rows);
    }
    if (this.known.size + rows.length > this.remembered) this.known.clear();
    for (const r of rows) this.known.set(r.key_id, r.organization_id);
    return rows;
  }
}
