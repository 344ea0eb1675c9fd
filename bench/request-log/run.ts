/**
 * `pnpm bench:request-log`: the request log's queries over 1,000,000 generated entries (docs/api.md
 * "Request log", "Analytics"; figures in docs/benchmarks.md).
 *
 * A fresh billing-ledger database with its migrations gets 100 organizations and 515 keys, and the
 * entries, spread over the last 89 days: one large organization holds half of them (a hot key 200,000
 * of those, 19 other keys the rest) and 99 smaller ones the other half; five models in uneven shares,
 * 95 % answered 200, 4 % 502, 1 % media jobs (202); then 2 % more entries are refusals (collapsed
 * groups with counts of 1 to 50, as the gateway's batches leave them). billing-ledger then runs as a
 * process (src/main.ts, as `npm start` runs it); its first roll-up pass takes the million entries
 * (timed), and each query goes to it over HTTP, signed as the gateway forwards it:
 * `GET /v1/usage/requests` for the hot key, `GET /admin/v1/organizations/{id}/requests` (its totals,
 * its analytics) for the large organization (the cabinet's pages run the same), `GET /admin/v1/keys/{id}`
 * (the key's activity) for the hot key. Each scenario runs sequentially, its parameters (cursor depth,
 * day, key) drawn anew for every run, after a warm-up; it prints p50, p95 and max, and whether p95 is
 * under the 300 ms target.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import path from "node:path";
import { Client } from "pg";
import type { Identity } from "@meter/contracts";
import { deployMigrations, dropDatabase, ensureDatabase, withDatabaseName } from "@meter/db-tools";
import { repoRoot } from "@meter/local-infra";
import { createTestVhost, signedCall, startServiceProcess, testKeyEnv } from "@meter/testing";
import { cleanupOnExit } from "../cleanup";

const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const WARMUP = 20;
const TARGET_MS = 300;
const MODELS = ["fake-claude", "meter-local-echo", "gpt-mini", "ocr-tesseract", "image-edit"];

interface Scenario {
  name: string;
  /** The path and query of one run, drawn anew each time. */
  next(): string;
  identity: "key" | "admin";
}

async function main(): Promise<void> {
  const root = repoRoot();
  const cleanup = cleanupOnExit();
  try {
    const databaseUrl = withDatabaseName("postgresql://postgres@127.0.0.1:5432/postgres", `meter_request_log_bench_${randomBytes(4).toString("hex")}`);
    await ensureDatabase(databaseUrl);
    cleanup.add(() => dropDatabase(databaseUrl));
    await deployMigrations({ serviceDir: path.join(root, "services", "billing-ledger"), databaseUrl });
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    cleanup.add(() => db.end());

    const { keys, orgs } = await seedAccounts(db);
    const started = performance.now();
    await generateEntries(db, keys);
    console.log(`generated ${ENTRIES.toLocaleString("en")} entries in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const size = await db.query<{ size: string }>("SELECT pg_size_pretty(pg_total_relation_size('request_log')) AS size");
    console.log(`request_log with its indexes: ${size.rows[0]!.size}`);

    const hotKey = keys[0]!;
    const bigOrg = orgs[0]!;
    // Cursors at random depths of the hot key's and the large organization's lists (up to 150,000 and 400,000 entries down).
    const keyCursors = await cursorsAt(db, "key_id", hotKey.id, 150_000);
    const orgCursors = await cursorsAt(db, "organization_id", bigOrg, 400_000);
    const days = Array.from(
      { length: 88 },
      (_, i) => new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() - 1 - i)),
    );
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;
    const day = () => {
      const from = pick(days);
      return `from=${encodeURIComponent(from.toISOString())}&to=${encodeURIComponent(new Date(from.getTime() + 86_400_000).toISOString())}`;
    };
    const bigOrgKeys = keys.filter((k) => k.organizationId === bigOrg);
    const orgPath = `/admin/v1/organizations/${bigOrg}/requests`;
    const analytics = `/admin/v1/organizations/${bigOrg}/analytics`;
    const budgetDay = (d: Date) => d.toISOString().slice(0, 10);
    const partialDay = () => {
      const from = new Date(pick(days).getTime() + Math.floor(Math.random() * 3_600_000));
      return `from=${encodeURIComponent(from.toISOString())}&to=${encodeURIComponent(new Date(from.getTime() + 86_400_000 + 1_234).toISOString())}`;
    };
    const scenarios: Scenario[] = [
      { name: "key: first page (20)", identity: "key", next: () => "/v1/usage/requests" },
      { name: "key: first page (100)", identity: "key", next: () => "/v1/usage/requests?limit=100" },
      { name: "key: model filter", identity: "key", next: () => `/v1/usage/requests?model=${pick(MODELS)}` },
      { name: "key: model + status=502", identity: "key", next: () => `/v1/usage/requests?model=${pick(MODELS)}&status=502` },
      { name: "key: one day", identity: "key", next: () => `/v1/usage/requests?${day()}` },
      { name: "key: deep cursor (<=150k)", identity: "key", next: () => `/v1/usage/requests?cursor=${pick(keyCursors)}` },
      { name: "org: first page (50)", identity: "admin", next: () => orgPath },
      { name: "org: key filter", identity: "admin", next: () => `${orgPath}?key_id=${pick(bigOrgKeys).id}` },
      { name: "org: model + day", identity: "admin", next: () => `${orgPath}?model=${pick(MODELS)}&${day()}` },
      {
        name: "org: key + model + status + day",
        identity: "admin",
        next: () => `${orgPath}?key_id=${pick(bigOrgKeys).id}&model=${pick(MODELS)}&status=200&${day()}`,
      },
      { name: "org: status=502", identity: "admin", next: () => `${orgPath}?status=502` },
      { name: "org: deep cursor (<=400k)", identity: "admin", next: () => `${orgPath}?cursor=${pick(orgCursors)}` },
      { name: "org: refused only", identity: "admin", next: () => `${orgPath}?status=refused` },
      { name: "org: model prefix", identity: "admin", next: () => `${orgPath}?model_prefix=${pick(["fake", "meter-local", "gpt", "ocr"])}` },
      { name: "org: totals, no filter (89 days)", identity: "admin", next: () => `${orgPath}/totals` },
      {
        name: "org: totals, key + model prefix + a day off the hour",
        identity: "admin",
        next: () => `${orgPath}/totals?key_id=${pick(bigOrgKeys).id}&model_prefix=${pick(["fake", "meter-local"])}&${partialDay()}`,
      },
      { name: "org: totals, status=502 (the index alone)", identity: "admin", next: () => `${orgPath}/totals?status=502&${day()}` },
      { name: "org: analytics, 30 days by model", identity: "admin", next: () => `${analytics}?group_by=model` },
      { name: "org: analytics, 89 days by key", identity: "admin", next: () => `${analytics}?group_by=key&from=${budgetDay(days.at(-1)!)}` },
      {
        name: "org: analytics, one day by the hour, by key",
        identity: "admin",
        next: () => {
          const d = budgetDay(pick(days));
          return `${analytics}?granularity=hour&group_by=key&from=${d}&to=${d}`;
        },
      },
      {
        name: "org: analytics, 7 days by the hour, by model",
        identity: "admin",
        next: () => {
          const d = pick(days.slice(7));
          return `${analytics}?granularity=hour&group_by=model&from=${budgetDay(d)}&to=${budgetDay(new Date(d.getTime() + 6 * 86_400_000))}`;
        },
      },
      { name: "key: activity (GET /admin/v1/keys/{id})", identity: "admin", next: () => `/admin/v1/keys/${pick([hotKey, ...bigOrgKeys]).id}` },
    ];

    await generateRefusals(db, keys);

    const vhost = await createTestVhost();
    cleanup.add(() => vhost.drop());
    const brokerUrls = await vhost.deployableUrls();
    const billing = await startServiceProcess(
      path.join(root, "services", "billing-ledger", "src", "main.ts"),
      root,
      {
        BILLING_LEDGER_PORT: "0",
        BILLING_LEDGER_DATABASE_URL: databaseUrl,
        RABBITMQ_URL: brokerUrls["billing-ledger"],
        ...testKeyEnv("billing-ledger"),
      },
      120_000,
    );
    cleanup.add(() => billing.stop());
    // billing's first roll-up pass takes every entry the load wrote: wait for it, and say how long it took.
    const rollupStarted = performance.now();
    for (;;) {
      const { rows } = await db.query<{ left: boolean }>(
        "SELECT EXISTS (SELECT 1 FROM request_log WHERE NOT refused AND xid >= (SELECT coalesce(max(next_xid), 0) FROM request_log_rollup)) AS left",
      );
      if (!rows[0]!.left) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    // As autovacuum would after such a load (it is off on these machines): the planner's statistics.
    await db.query("VACUUM ANALYZE request_log_hourly");
    const hourly = await db.query<{ n: string }>("SELECT count(*) AS n FROM request_log_hourly");
    console.log(
      `the first roll-up pass took the entries in ${((performance.now() - rollupStarted) / 1000).toFixed(1)} s (billing's start included): ${Number(hourly.rows[0]!.n).toLocaleString("en")} hourly rows`,
    );

    const call = async (s: Scenario, pathAndQuery: string): Promise<number> => {
      const identity: Identity =
        s.identity === "admin"
          ? { kind: "admin" }
          : { kind: "key", key_id: hotKey.id, user_id: hotKey.userId, organization_id: hotKey.organizationId, scopes: ["text"] };
      const { headers } = signedCall("gateway", "billing-ledger", identity, "GET", pathAndQuery);
      const t0 = performance.now();
      const res = await fetch(`${billing.url}${pathAndQuery}`, { headers });
      const body = await res.text();
      const ms = performance.now() - t0;
      if (res.status !== 200) throw new Error(`${pathAndQuery}: ${res.status} ${body.slice(0, 300)}`);
      return ms;
    };

    const lines = [`| query | p50 ms | p95 ms | max ms | p95 < ${TARGET_MS} ms |`, "|---|---:|---:|---:|---|"];
    let allUnder = true;
    for (const s of scenarios) {
      for (let i = 0; i < WARMUP; i++) await call(s, s.next());
      const times: number[] = [];
      for (let i = 0; i < RUNS; i++) times.push(await call(s, s.next()));
      times.sort((x, y) => x - y);
      const q = (p: number) => times[Math.min(times.length - 1, Math.ceil(p * times.length) - 1)]!;
      const under = q(0.95) < TARGET_MS;
      allUnder &&= under;
      lines.push(`| ${s.name} | ${q(0.5).toFixed(1)} | ${q(0.95).toFixed(1)} | ${times.at(-1)!.toFixed(1)} | ${under ? "yes" : "NO"} |`);
      console.log(lines.at(-1));
    }
    // Every figure includes the HTTP round trip and the machine's other work: say how busy it was.
    const [one, five] = loadavg();
    console.log(
      `\n${ENTRIES.toLocaleString("en")} entries, ${RUNS} runs per query after ${WARMUP} warm-up runs, over HTTP to billing-ledger; load average ${one!.toFixed(1)} (1 min), ${five!.toFixed(1)} (5 min)\n`,
    );
    console.log(lines.join("\n"));
    if (!allUnder) process.exitCode = 1;
  } finally {
    await cleanup.run();
  }
}

interface Key {
  id: string;
  organizationId: string;
  userId: string;
}

/** 100 organizations, one member each; the first has 20 keys, the others 5. */
async function seedAccounts(db: Client): Promise<{ keys: Key[]; orgs: string[] }> {
  const orgs: string[] = [];
  const keys: Key[] = [];
  for (let o = 0; o < 100; o++) {
    const org = randomUUID();
    const user = randomUUID();
    orgs.push(org);
    await db.query("INSERT INTO organizations (id, name) VALUES ($1, $2)", [org, `bench ${o}`]);
    await db.query("INSERT INTO users (id, email) VALUES ($1, $2)", [user, `bench-${o}@example.test`]);
    for (let k = 0; k < (o === 0 ? 20 : 5); k++) {
      const id = randomUUID();
      await db.query(
        `INSERT INTO api_keys (id, user_id, organization_id, name, prefix, key_hash, scopes, daily_budget)
         VALUES ($1, $2, $3, $4, 'mk_bench', $5, '{text}', 1000000000)`,
        [id, user, org, `key ${k}`, randomBytes(16).toString("hex")],
      );
      keys.push({ id, organizationId: org, userId: user });
    }
  }
  return { keys, orgs };
}

/**
 * Entry i goes to the hot key (20 %), another key of the large organization (30 %) or a key of the
 * other organizations (50 %); the rest of its fields are random in plausible ranges.
 */
async function generateEntries(db: Client, keys: readonly Key[]): Promise<void> {
  // A bulk load: the secondary indexes are built once at the end (exactly as the migrations define them).
  const { rows: indexes } = await db.query<{ name: string; def: string }>(
    "SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE tablename = 'request_log' AND indexname <> 'request_log_pkey'",
  );
  for (const i of indexes) await db.query(`DROP INDEX "${i.name}"`);
  const CHUNK = 100_000;
  for (let start = 1; start <= ENTRIES; start += CHUNK) {
    const end = Math.min(ENTRIES, start + CHUNK - 1);
    await db.query(
      `INSERT INTO request_log (hold_id, organization_id, key_id, created_at, completed_at, endpoint, model, status, succeeded,
         input_tokens, output_tokens, unit, quantity, estimated_cost, cost, latency_ms, upstream_latency_ms, request_id, idempotency_key)
       SELECT gen_random_uuid(), k.org, k.id, t.at, t.at + t.latency * interval '1 millisecond',
         CASE WHEN m.model IN ('ocr-tesseract', 'image-edit') THEN '/v1/ocr' ELSE '/v1/messages' END, m.model,
         s.status, s.status <> 502,
         CASE WHEN m.media THEN NULL ELSE 50 + (random() * 2000)::int END, CASE WHEN m.media THEN NULL ELSE (random() * 1000)::int END,
         CASE WHEN m.media THEN 'page' END, CASE WHEN m.media THEN 1 + (random() * 10)::int END,
         20000, CASE WHEN s.status = 502 THEN 0 ELSE (random() * 20000)::int END,
         t.latency, CASE WHEN m.media OR s.status = 502 THEN NULL ELSE t.latency - 5 END,
         gen_random_uuid()::text, 'idem-' || g.i
       FROM generate_series($3::int, $4::int) AS g(i)
       CROSS JOIN LATERAL (
         SELECT CASE WHEN g.i % 10 < 2 THEN 1 WHEN g.i % 10 < 5 THEN 2 + (g.i / 10) % 19 ELSE 21 + floor(random() * (cardinality($1::uuid[]) - 20) + g.i * 0)::int END AS n,
                random() + g.i * 0 AS r_model, random() + g.i * 0 AS r_status
       ) p
       CROSS JOIN LATERAL (
         SELECT CASE WHEN p.r_model < 0.40 THEN 'fake-claude' WHEN p.r_model < 0.65 THEN 'meter-local-echo' WHEN p.r_model < 0.80 THEN 'gpt-mini'
                     WHEN p.r_model < 0.92 THEN 'ocr-tesseract' ELSE 'image-edit' END AS model
       ) m0
       CROSS JOIN LATERAL (SELECT m0.model, m0.model IN ('ocr-tesseract', 'image-edit') AS media) m
       CROSS JOIN LATERAL (SELECT CASE WHEN m.media THEN 202 WHEN p.r_status < 0.04 THEN 502 ELSE 200 END::smallint AS status) s
       CROSS JOIN LATERAL (SELECT now() - random() * interval '89 days' + g.i * interval '0 s' AS at, 100 + (random() * 3000)::int + g.i * 0 AS latency) t
       JOIN unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS k(id, org, n) ON k.n = p.n`,
      [keys.map((k) => k.id), keys.map((k) => k.organizationId), start, end],
    );
    process.stdout.write(`\r${end.toLocaleString("en")} entries`);
  }
  process.stdout.write("\n");
  for (const i of indexes) await db.query(i.def);
  // Autovacuum does this for a table that grows by inserts; the visibility map lets pages be read from the index alone.
  await db.query("VACUUM ANALYZE request_log");
}

/**
 * Refusal groups as the gateway's batches leave them (2 % of the entries, counts of 1 to 50): 429s and
 * 404s over the same keys and days, and their counts in the hourly figures, as the function that
 * records them writes both.
 */
async function generateRefusals(db: Client, keys: readonly Key[]): Promise<void> {
  await db.query(
    `INSERT INTO request_log (hold_id, organization_id, key_id, created_at, completed_at, endpoint, model, status, succeeded, refused,
       estimated_cost, cost, latency_ms, request_id, error_code, error_message, count)
     SELECT gen_random_uuid(), k.org, k.id, t.at, t.at + interval '20 minutes', '/v1/messages', CASE WHEN g.i % 2 = 0 THEN 'fake-claude' ELSE 'no-such-model' END,
       CASE WHEN g.i % 2 = 0 THEN 429 ELSE 404 END, false, true, 0, 0, 0, gen_random_uuid()::text,
       CASE WHEN g.i % 2 = 0 THEN 'daily_budget_exceeded' ELSE 'model_not_found' END, 'refused', 1 + (random() * 49)::int
     FROM generate_series(1, $3::int) AS g(i)
     CROSS JOIN LATERAL (SELECT 1 + (g.i * 7919) % cardinality($1::uuid[]) AS n, now() - random() * interval '89 days' + g.i * interval '0 s' AS at) t
     JOIN unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS k(id, org, n) ON k.n = t.n`,
    [keys.map((k) => k.id), keys.map((k) => k.organizationId), Math.round(ENTRIES * 0.02)],
  );
  await db.query(
    `INSERT INTO request_log_hourly (organization_id, hour, key_id, model, refused)
     SELECT organization_id, date_trunc('hour', created_at, 'UTC'), key_id, coalesce(model, ''), sum(count)
     FROM request_log WHERE refused GROUP BY 1, 2, 3, 4
     ON CONFLICT (organization_id, hour, key_id, model) DO UPDATE SET refused = request_log_hourly.refused + excluded.refused`,
  );
  await db.query("VACUUM ANALYZE request_log");
}

/** next_cursor values of entries at random depths of an owner's newest-first list. */
async function cursorsAt(db: Client, column: "key_id" | "organization_id", owner: string, maxDepth: number): Promise<string[]> {
  const cursors: string[] = [];
  const { rows: counted } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM request_log WHERE ${column} = $1`, [owner]);
  const deepest = Math.min(maxDepth, counted[0]!.n - 1);
  for (let i = 0; i < 50; i++) {
    const depth = Math.floor(Math.random() * deepest);
    const { rows } = await db.query<{ created_at: Date; hold_id: string }>(
      `SELECT created_at, hold_id FROM request_log WHERE ${column} = $1 ORDER BY created_at DESC, hold_id DESC OFFSET $2 LIMIT 1`,
      [owner, depth],
    );
    if (rows[0]) cursors.push(Buffer.from(`${rows[0].created_at.toISOString()}|${rows[0].hold_id}`, "utf8").toString("base64url"));
  }
  return cursors;
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
