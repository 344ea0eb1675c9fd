import pg from "pg";
import { databaseName, ensureDatabase, withDatabaseName } from "./postgres";

/**
 * A service's database with its two roles, as k8s/dev-dependencies/postgres/service-database.sql makes
 * them (docs/deploy.md, Databases and roles), for `npm start` on a local server where we are superuser:
 * `<db>_owner` owns the database, its schema and everything in it (the migrations log in with it),
 * `<db>_app` may only read and write rows (the processes log in with it). Idempotent, and it converges
 * a database made before the roles (its objects owned by the superuser) to the same state.
 * Local PostgreSQL trusts 127.0.0.1, so the roles have no password.
 */
export interface ServiceRoles {
  ownerUrl: string;
  appUrl: string;
}

const quote = (name: string): string => `"${name.replaceAll('"', '""')}"`;

function asRole(url: string, role: string): string {
  const next = new URL(url);
  next.username = role;
  next.password = "";
  return next.toString();
}

async function withClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** `superuserUrl`: the service's database as a superuser (`postgresql://postgres@127.0.0.1:5432/meter_text`). */
export async function ensureServiceRoles(superuserUrl: string): Promise<ServiceRoles> {
  const db = databaseName(superuserUrl);
  const owner = `${db}_owner`;
  const app = `${db}_app`;
  await ensureDatabase(superuserUrl);
  await withClient(withDatabaseName(superuserUrl, "postgres"), async (c) => {
    for (const role of [owner, app]) {
      const exists = await c.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [role]);
      // Two starts racing: the loser's CREATE fails with duplicate_object (42710), which is what it wanted.
      if (exists.rowCount === 0)
        await c.query(`CREATE ROLE ${quote(role)} LOGIN`).catch((e: { code?: string }) => (e.code === "42710" ? undefined : Promise.reject(e)));
    }
    await c.query(`ALTER DATABASE ${quote(db)} OWNER TO ${quote(owner)}`);
    await c.query(`REVOKE ALL ON DATABASE ${quote(db)} FROM PUBLIC`);
    await c.query(`GRANT CONNECT, TEMPORARY ON DATABASE ${quote(db)} TO ${quote(app)}`);
  });
  await withClient(superuserUrl, async (c) => {
    await c.query(`ALTER SCHEMA public OWNER TO ${quote(owner)}`);
    await c.query("REVOKE ALL ON SCHEMA public FROM PUBLIC");
    await c.query(`GRANT USAGE ON SCHEMA public TO ${quote(app)}`);
    await reassignToOwner(c, owner);
    for (const [kind, rights] of [
      ["TABLES", "SELECT, INSERT, UPDATE, DELETE"],
      ["SEQUENCES", "USAGE, SELECT, UPDATE"],
      ["FUNCTIONS", "EXECUTE"],
    ] as const) {
      await c.query(`ALTER DEFAULT PRIVILEGES FOR ROLE ${quote(owner)} IN SCHEMA public GRANT ${rights} ON ${kind} TO ${quote(app)}`);
      // What existed before the default privileges (a database made before the roles).
      await c.query(`GRANT ${rights} ON ALL ${kind} IN SCHEMA public TO ${quote(app)}`);
    }
  });
  return { ownerUrl: asRole(superuserUrl, owner), appUrl: asRole(superuserUrl, app) };
}

/**
 * Objects of the public schema another role owns (the superuser, where the migrations ran as it before)
 * become the owner's: tables first (their sequences follow them), then what is left.
 */
async function reassignToOwner(c: pg.Client, owner: string): Promise<void> {
  const tables = await c.query<{ name: string; kind: string }>(
    `SELECT c.relname AS name, c.relkind AS kind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'S') AND pg_get_userbyid(c.relowner) <> $1
       AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i') AND d.classid = 'pg_class'::regclass AND c.relkind = 'S')
     ORDER BY c.relkind = 'S'`,
    [owner],
  );
  for (const t of tables.rows) {
    const what = t.kind === "S" ? "SEQUENCE" : t.kind === "v" ? "VIEW" : t.kind === "m" ? "MATERIALIZED VIEW" : "TABLE";
    await c.query(`ALTER ${what} public.${quote(t.name)} OWNER TO ${quote(owner)}`);
  }
  const types = await c.query<{ name: string; kind: string }>(
    `SELECT t.typname AS name, t.typtype AS kind FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
     WHERE n.nspname = 'public' AND t.typtype IN ('e', 'd') AND pg_get_userbyid(t.typowner) <> $1`,
    [owner],
  );
  for (const t of types.rows) await c.query(`ALTER ${t.kind === "d" ? "DOMAIN" : "TYPE"} public.${quote(t.name)} OWNER TO ${quote(owner)}`);
  const functions = await c.query<{ signature: string }>(
    `SELECT p.oid::regprocedure::text AS signature FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) <> $1`,
    [owner],
  );
  for (const f of functions.rows) await c.query(`ALTER ROUTINE ${f.signature} OWNER TO ${quote(owner)}`);
}
