/**
 * A hold owner's restore point: when it first ran on its current database, if that database was
 * restored from a backup; null if it never was. Each database the owner runs on is recorded by its OID
 * (`database_incarnations`); pg_restore into a freshly created database brings back the old rows under
 * a new OID, which is how a restore shows. Cheap enough to ask on every audit or cross-check call, so a
 * restore is seen without a restart.
 */
export async function restorePointOf(query: (sql: string) => Promise<{ rows: unknown[] }>): Promise<Date | null> {
  await query(
    `INSERT INTO database_incarnations (db_oid)
     SELECT oid::bigint FROM pg_database WHERE datname = current_database()
     ON CONFLICT (db_oid) DO NOTHING`,
  );
  const { rows } = await query(
    `WITH cur AS (SELECT oid::bigint AS oid FROM pg_database WHERE datname = current_database())
     SELECT (SELECT i.first_seen_at FROM database_incarnations i, cur WHERE i.db_oid = cur.oid) AS restored_at
     WHERE EXISTS (SELECT 1 FROM database_incarnations i, cur WHERE i.db_oid <> cur.oid)`,
  );
  return (rows[0] as { restored_at: Date | null } | undefined)?.restored_at ?? null;
}
