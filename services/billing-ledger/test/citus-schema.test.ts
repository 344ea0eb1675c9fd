import { DISTRIBUTED_TABLES } from "@meter/testing";
import { seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

/**
 * Billing's schema against Citus's rules (docs/scale.md), read from PostgreSQL's catalog after every
 * migration (the after-rollout ones too) and SQL file: each table has a declared role, and the rules of
 * that role are checked. There is no violation; a new table or key that breaks a rule fails.
 */
type Role = "distributed" | "reference" | "local";

/**
 * Every table of billing's public schema, and its distribution column when distributed: the distributed
 * ones are the money-path check's (@meter/testing), so a table this test declares distributed is recorded there too.
 */
const ROLES: Record<string, { role: Role; by?: string }> = {
  ...Object.fromEntries(Object.entries(DISTRIBUTED_TABLES).map(([table, by]) => [table, { role: "distributed" as const, by }])),
  users: { role: "reference" },
  api_key_hashes: { role: "reference" },
  catalog_models: { role: "reference" },
  cabinet_sessions: { role: "local" },
  cabinet_invitations: { role: "local" },
  sign_in_failures: { role: "local" },
  outbox_messages: { role: "local" },
  request_log_rollup: { role: "local" },
  _meter_sql_files: { role: "local" },
  _prisma_migrations: { role: "local" },
};

let h: BillingHarness;
beforeAll(async () => {
  h = await startBilling();
});
afterAll(async () => {
  await h.close();
});

interface Column {
  table: string;
  column: string;
  not_null: boolean;
}
interface UniqueIndex {
  table: string;
  name: string;
  columns: string[];
}
interface ForeignKey {
  table: string;
  name: string;
  columns: string[];
  ref_table: string;
  ref_columns: string[];
}
interface Trigger {
  table: string;
  name: string;
}

async function catalog() {
  const tables = await h.db.$queryRaw<{ table: string }[]>`
    SELECT c.relname AS table FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') ORDER BY 1`;
  const columns = await h.db.$queryRaw<Column[]>`
    SELECT c.relname AS table, a.attname AS column, a.attnotnull AS not_null
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped`;
  // Primary keys, unique constraints and unique indexes alike (a partial or expression index too).
  const uniques = await h.db.$queryRaw<UniqueIndex[]>`
    SELECT t.relname AS table, i.relname AS name,
           array(SELECT a.attname::text FROM unnest(x.indkey) k JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k) AS columns
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
    WHERE t.relnamespace = 'public'::regnamespace AND x.indisunique`;
  const foreignKeys = await h.db.$queryRaw<ForeignKey[]>`
    SELECT t.relname AS table, k.conname AS name, r.relname AS ref_table,
           array(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY u(n, i) JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n ORDER BY u.i) AS columns,
           array(SELECT a.attname::text FROM unnest(k.confkey) WITH ORDINALITY u(n, i) JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.n ORDER BY u.i) AS ref_columns
    FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid JOIN pg_class r ON r.oid = k.confrelid
    WHERE k.contype = 'f' AND t.relnamespace = 'public'::regnamespace`;
  const triggers = await h.db.$queryRaw<Trigger[]>`
    SELECT c.relname AS table, g.tgname AS name FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
    WHERE c.relnamespace = 'public'::regnamespace AND NOT g.tgisinternal`;
  return { tables: tables.map((t) => t.table), columns, uniques, foreignKeys, triggers };
}

/** Triggers on distributed tables that run per shard on Citus (each reads and writes its own row's organization only). */
const PER_SHARD_TRIGGERS = new Set([
  "ledger_entries.ledger_entries_no_update_or_delete",
  "key_daily_usage.key_daily_usage_budget_threshold",
  "organizations.organizations_balance_low",
]);

function violations(c: Awaited<ReturnType<typeof catalog>>): string[] {
  const found: string[] = [];
  const roleOf = (table: string) => ROLES[table]?.role;
  for (const table of c.tables) if (!ROLES[table]) found.push(`${table}: no declared role`);
  for (const table of Object.keys(ROLES)) if (!c.tables.includes(table)) found.push(`${table}: declared but not in the schema`);
  for (const [table, { role, by }] of Object.entries(ROLES)) {
    if (role !== "distributed" || !c.tables.includes(table)) continue;
    const column = c.columns.find((x) => x.table === table && x.column === by);
    if (!column) found.push(`${table}: no ${by}`);
    else if (!column.not_null) found.push(`${table}: ${by} is nullable`);
    for (const u of c.uniques.filter((x) => x.table === table)) {
      if (!u.columns.includes(by!)) found.push(`${table}: unique key ${u.name} (${u.columns.join(", ")}) lacks ${by}`);
    }
    for (const t of c.triggers.filter((x) => x.table === table)) {
      if (!PER_SHARD_TRIGGERS.has(`${table}.${t.name}`)) found.push(`${table}: trigger ${t.name} is not a declared per-shard one`);
    }
  }
  for (const fk of c.foreignKeys) {
    const [from, to] = [roleOf(fk.table), roleOf(fk.ref_table)];
    const where = `${fk.table}: foreign key ${fk.name} (${fk.columns.join(", ")}) -> ${fk.ref_table} (${fk.ref_columns.join(", ")})`;
    if (to === "reference") continue;
    if (from === "distributed" && to === "distributed") {
      // Co-located: the distribution column of each side, at the same place in the key.
      const at = fk.columns.indexOf(ROLES[fk.table]!.by!);
      if (at < 0 || fk.ref_columns[at] !== ROLES[fk.ref_table]!.by) found.push(`${where} is not on organization_id`);
    } else if (from !== to) {
      found.push(`${where}: a ${from} table may not point at a ${to} one`);
    }
  }
  return found.sort();
}

it("declares a role for every table of billing's schema and breaks none of Citus's rules", async () => {
  expect(violations(await catalog())).toEqual([]);
});

it("finds what it looks for: a key without the organization, a nullable one, a cross-role foreign key, an undeclared table", async () => {
  const c = await catalog();
  const broken = {
    ...c,
    tables: [...c.tables, "stray"],
    columns: c.columns.map((x) => (x.table === "holds" && x.column === "organization_id" ? { ...x, not_null: false } : x)),
    uniques: [...c.uniques, { table: "key_daily_usage", name: "kdu_key_day", columns: ["key_id", "day"] }],
    foreignKeys: [
      ...c.foreignKeys,
      { table: "cabinet_sessions", name: "cs_org", columns: ["organization_id"], ref_table: "organizations", ref_columns: ["id"] },
    ],
  };
  expect(violations(broken)).toEqual(
    [
      "cabinet_sessions: foreign key cs_org (organization_id) -> organizations (id): a local table may not point at a distributed one",
      "holds: organization_id is nullable",
      "key_daily_usage: unique key kdu_key_day (key_id, day) lacks organization_id",
      "stray: no declared role",
    ].sort(),
  );
});

it("finds a key by its hash through api_key_hashes, written with the key; a key without a row there by its own column", async () => {
  const a = await seedAccount(h, { credit: 1_000 });
  expect(await h.db.$queryRaw`SELECT key_id, organization_id FROM api_key_hashes WHERE key_id = ${a.keyId}::uuid`).toEqual([
    { key_id: a.keyId, organization_id: a.organizationId },
  ]);
  const verify = () => h.call("POST", "/internal/v1/keys/verify", { kind: "service", service: "gateway" }, { key: a.key });
  expect((await verify().expect(200)).body.identity).toMatchObject({ key_id: a.keyId, organization_id: a.organizationId });
  // As a key made by the previous release (no row): still found.
  await h.db.$executeRaw`DELETE FROM api_key_hashes WHERE key_id = ${a.keyId}::uuid`;
  expect((await verify().expect(200)).body.identity).toMatchObject({ key_id: a.keyId, organization_id: a.organizationId });
});
