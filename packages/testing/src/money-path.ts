import path from "node:path";
import { repoRoot } from "@meter/local-infra";
import pg from "pg";

/**
 * The money-path proof of docs/scale.md ("one organization per transaction"): in the suites below,
 * billing's test database gets triggers that record (transaction id, organization, table, session
 * name) of every row written to a table distributed by organization, and billing runs with
 * HOLD_BATCH_TRANSACTIONS=organization, as on Citus. `npm test`'s money path check then reads the
 * records (money-path-check.ts). Every other suite keeps the default `batch` mode and tests it.
 */
export const MONEY_PATH_SUITES: readonly string[] = [
  // billing's own money suites: placements, grants, settlements, releases, sweeps, audits, repairs.
  "services/billing-ledger/test/money-path-organizations.test.ts", // batches mixing six organizations, every way holders send them
  "services/billing-ledger/test/allowances.test.ts", // grants, requests on allowances, closes, recalls
  "services/billing-ledger/test/allowance-batch.test.ts", // the allowance pass over many requests
  "services/billing-ledger/test/op-organizations.test.ts", // which organization each op of a batch runs in
  "services/billing-ledger/test/hold-ownership.test.ts", // reused and foreign hold ids
  "services/billing-ledger/test/hold-expiry.test.ts", // the expiry sweep
  "services/billing-ledger/test/hold-audit.test.ts", // the audit's settlements and releases
  "services/billing-ledger/test/books-cross-check.test.ts", // the cross-check's repairs
  "services/billing-ledger/test/concurrency.test.ts", // replicas placing and settling at once
  "services/billing-ledger/test/key-budget-race.test.ts", // a key's budget raced by placements
  // (holds, hold-commands and locks count transactions per batch: they test the default `batch` mode.)
  // The e2e suites that spend money through the gateway and text, billing in its own process.
  "e2e/crash.test.ts", // per-request holds, text killed with requests in flight
  "e2e/allowances.test.ts", // allowances of several organizations, kills and closes
  "e2e/money-drill.test.ts", // a budget race while billing and text are killed and restarted
  "e2e/request-log.test.ts", // paid requests and refusals of two organizations, the roll-up
];

/** billing's tables distributed by organization (docs/scale.md, "Roles"), with their distribution column. */
export const DISTRIBUTED_TABLES: Readonly<Record<string, string>> = {
  organizations: "id",
  memberships: "organization_id",
  api_keys: "organization_id",
  key_daily_usage: "organization_id",
  holds: "organization_id",
  ledger_entries: "organization_id",
  credits: "organization_id",
  webhook_endpoints: "organization_id",
  webhook_events: "organization_id",
  webhook_deliveries: "organization_id",
  webhook_delivery_attempts: "organization_id",
  request_log: "organization_id",
  request_log_hourly: "organization_id",
  request_log_daily: "organization_id",
};

/** Where the triggers write; its presence marks a database as recorded. */
export const WRITES_TABLE = "test_txn_writes";

/** The jest suite running in this process, relative to the repository (undefined outside jest). */
function currentSuite(): string | undefined {
  const expect = (globalThis as { expect?: { getState(): { testPath?: string } } }).expect;
  const testPath = expect?.getState().testPath;
  return testPath ? path.relative(repoRoot(), testPath).split(path.sep).join("/") : undefined;
}

/** Whether this suite's billing is recorded (it is in MONEY_PATH_SUITES). */
export function recordsMoneyPath(): boolean {
  const suite = currentSuite();
  return suite !== undefined && MONEY_PATH_SUITES.includes(suite);
}

/** billing's settings in a recorded suite: each organization's part of a batch its own transaction, as on Citus. */
export function moneyPathSettings(): Record<string, string> {
  return recordsMoneyPath() ? { HOLD_BATCH_TRANSACTIONS: "organization" } : {};
}

/** Installs the recording triggers on a billing database (right after its migrations). */
export async function recordWrites(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(
      `CREATE TABLE ${WRITES_TABLE} (txid bigint NOT NULL, organization_id uuid, tbl text NOT NULL, op text NOT NULL, application_name text NOT NULL)`,
    );
    // Which suite wrote it, for the check's report (a literal: a path of this repository).
    await client.query(`COMMENT ON TABLE ${WRITES_TABLE} IS '${(currentSuite() ?? "unknown").replace(/'/g, "''")}'`);
    for (const [table, column] of Object.entries(DISTRIBUTED_TABLES)) {
      await client.query(`
        CREATE FUNCTION test_record_${table}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO ${WRITES_TABLE} VALUES (txid_current(), CASE WHEN TG_OP = 'DELETE' THEN OLD.${column} ELSE NEW.${column} END,
                                             TG_TABLE_NAME, TG_OP, current_setting('application_name'));
          RETURN NULL;
        END $$`);
      await client.query(`CREATE TRIGGER test_record_writes AFTER INSERT OR UPDATE OR DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION test_record_${table}()`);
    }
  } finally {
    await client.end();
  }
}
