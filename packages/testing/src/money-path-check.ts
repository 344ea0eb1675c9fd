import pg from "pg";
import { WRITES_TABLE } from "./money-path";

/**
 * What counts in the money-path check: writes made on billing-ledger's own connections (its pool
 * names its sessions "billing-ledger"; a test's own client does not, so fixtures that seed several
 * organizations at once by hand are not counted), less the global jobs that write several
 * organizations by nature (docs/scale.md, "Global jobs"), named by their transactions.
 */
export const BILLING_SESSION = "billing-ledger";
export const GLOBAL_JOBS: readonly string[] = ["billing-ledger/request-log-rollup", "billing-ledger/request-log-retention"];

export interface CrossOrganizationTransaction {
  txid: string;
  organizations: string[];
  tables: string[];
  /** The application_name of the session that wrote: which billing process or job. */
  sessions: string[];
}

export interface MoneyPathFindings {
  /** The suite whose database it is. */
  suite: string;
  /** Transactions of billing's own code that wrote rows of more than one organization: each a failure. */
  crossing: CrossOrganizationTransaction[];
  /** Rows written by billing's own code (none means nothing of billing's was recorded). */
  billingWrites: number;
  /** Multi-organization transactions of the global jobs, left out by name. */
  globalJobs: { session: string; transactions: number }[];
}

const isBilling = `(application_name = $1 OR application_name LIKE $1 || '/%')`;

/** Reads a recorded billing database's writes; undefined when the database was not recorded. */
export async function moneyPathFindings(url: string): Promise<MoneyPathFindings | undefined> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const recorded = await client.query<{ t: string | null; suite: string | null }>(
      "SELECT to_regclass($1)::text AS t, obj_description(to_regclass($1), 'pg_class') AS suite",
      [WRITES_TABLE],
    );
    if (!recorded.rows[0]?.t) return undefined;
    const crossing = await client.query<CrossOrganizationTransaction>(
      `SELECT txid::text, array_agg(DISTINCT organization_id::text) AS organizations, array_agg(DISTINCT tbl) AS tables,
              array_agg(DISTINCT application_name) AS sessions
       FROM ${WRITES_TABLE} WHERE ${isBilling} AND application_name <> ALL ($2)
       GROUP BY txid HAVING count(DISTINCT organization_id) > 1 ORDER BY txid`,
      [BILLING_SESSION, GLOBAL_JOBS],
    );
    const writes = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${WRITES_TABLE} WHERE ${isBilling}`, [BILLING_SESSION]);
    const jobs = await client.query<{ session: string; transactions: number }>(
      `SELECT session, count(*)::int AS transactions FROM (
         SELECT txid, min(application_name) AS session FROM ${WRITES_TABLE} WHERE application_name = ANY ($1)
         GROUP BY txid HAVING count(DISTINCT organization_id) > 1) t
       GROUP BY session ORDER BY session`,
      [GLOBAL_JOBS],
    );
    return { suite: recorded.rows[0].suite ?? "unknown", crossing: crossing.rows, billingWrites: writes.rows[0]!.n, globalJobs: jobs.rows };
  } finally {
    await client.end();
  }
}

/** Lines that name each offending transaction: its organizations, tables and session. */
export function formatCrossing(crossing: readonly CrossOrganizationTransaction[]): string[] {
  return crossing.map(
    (t) =>
      `  transaction ${t.txid} by ${t.sessions.join(", ")}: ${t.organizations.length} organizations (${t.organizations.join(", ")}) in ${t.tables.join(", ")}`,
  );
}
