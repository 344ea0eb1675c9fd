import path from "node:path";
import { createTestDatabase, type TestDatabase } from "@meter/testing";
import { createDatabase, type Db, type FilesDatabase } from "../src/db";
import { SweepSql } from "../src/repositories/file.repository";

/**
 * The retention sweeper's statements on a table that has kept ~100k finished files (deleted and
 * expired rows stay for the record): each must be served by its partial index, never by reading the
 * table, so a sweep costs what is due rather than everything ever stored.
 */
let database: TestDatabase;
let db: Db;
let handle: FilesDatabase;
const NOW = new Date();
const FINISHED = 100_000;

/** Columns every row needs; the status and timestamps vary by kind. */
const INSERT = `
  INSERT INTO files (id, user_id, organization_id, purpose, filename, mime_type, size_bytes, sha256, object_key,
                     status, created_at, upload_expires_at, expires_at, removed_at, object_purged_at,
                     verification_requested_at, upload_started_at, upload_attempt_id, upload_lease_expires_at, rejection_code)
  SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'upload', 'f.png', 'image/png', 1000, repeat('a', 64),
         'uploads/' || g, s.status::file_status, s.created_at, s.created_at + interval '5 minutes', s.created_at + interval '7 days',
         s.removed_at, s.purged_at, s.verification_requested_at, s.upload_started_at, s.attempt, s.lease, s.rejection::rejection_code
  FROM generate_series(1, $1::int) g,
       LATERAL (SELECT $2::timestamptz - make_interval(secs => $3::float8 * random()) AS created_at) c,
       LATERAL (SELECT $4::text AS status, c.created_at,
                       CASE WHEN $4 IN ('deleted', 'expired') THEN c.created_at + interval '7 days' END AS removed_at,
                       CASE WHEN $5 THEN c.created_at + interval '7 days' END AS purged_at,
                       CASE WHEN $4 = 'verifying' THEN c.created_at END AS verification_requested_at,
                       CASE WHEN $4 = 'uploading' THEN c.created_at END AS upload_started_at,
                       CASE WHEN $4 = 'uploading' THEN gen_random_uuid() END AS attempt,
                       CASE WHEN $4 = 'uploading' THEN c.created_at + interval '30 seconds' END AS lease,
                       CASE WHEN $4 = 'rejected' THEN 'checksum_mismatch' END AS rejection) s`;

const DAY_S = 24 * 3600;

beforeAll(async () => {
  database = await createTestDatabase(path.resolve(__dirname, ".."));
  handle = createDatabase(database.url, 2);
  db = handle.prisma;
  const month = new Date(NOW.getTime() - 30 * DAY_S * 1000);
  // The history: files deleted or expired weeks ago, their objects long purged.
  await db.$executeRawUnsafe(INSERT, FINISHED / 2, month, 30 * DAY_S, "expired", true);
  await db.$executeRawUnsafe(INSERT, FINISHED / 2, month, 30 * DAY_S, "deleted", true);
  // What is live now, of every kind the sweeper looks at, a few of each due.
  await db.$executeRawUnsafe(INSERT, 2_000, NOW, 7 * DAY_S, "verified", false);
  await db.$executeRawUnsafe(INSERT, 200, NOW, 600, "awaiting_upload", false);
  await db.$executeRawUnsafe(INSERT, 20, NOW, 600, "uploading", false);
  await db.$executeRawUnsafe(INSERT, 50, NOW, 3_600, "verifying", false);
  await db.$executeRawUnsafe(INSERT, 50, NOW, 3_600, "rejected", false);
  await db.$executeRawUnsafe("ANALYZE files");
}, 120_000);

afterAll(async () => {
  await handle?.close();
  await database?.drop();
});

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}

async function plan(sql: string, params: unknown[]): Promise<PlanNode[]> {
  const [row] = await db.$queryRawUnsafe<{ "QUERY PLAN": unknown }[]>(`EXPLAIN (FORMAT JSON) ${sql}`, ...params);
  const raw = row?.["QUERY PLAN"];
  const [top] = (typeof raw === "string" ? JSON.parse(raw) : raw) as { Plan: PlanNode }[];
  const nodes: PlanNode[] = [];
  const walk = (n: PlanNode) => {
    nodes.push(n);
    n.Plans?.forEach(walk);
  };
  if (top) walk(top.Plan);
  return nodes;
}

it("has the history it is meant to have", async () => {
  const [row] = await db.$queryRawUnsafe<{ finished: bigint }[]>("SELECT count(*) AS finished FROM files WHERE status IN ('deleted', 'expired')");
  expect(Number(row?.finished)).toBe(FINISHED);
});

it.each([
  { what: "expires files whose retention is over", sql: SweepSql.expireRetention, params: [NOW, 100], index: "files_live_expires_at_idx" },
  { what: "expires uploads that can no longer complete", sql: SweepSql.expireDeadUploads, params: [NOW, 100], index: "files_open_uploads_idx" },
  { what: "claims objects to delete", sql: SweepSql.claimPurge, params: [100], index: "files_objects_to_purge_idx" },
  {
    what: "claims verifications to send again",
    sql: SweepSql.claimStaleVerifications,
    params: [new Date(NOW.getTime() - 15 * 60_000), 100],
    index: "files_verifying_idx",
  },
])("$what through $index, without reading the table", async ({ sql, params, index }) => {
  const nodes = await plan(sql, params);
  const scans = nodes.filter((n) => n["Relation Name"] === "files").map((n) => `${n["Node Type"]} ${n["Index Name"] ?? ""}`.trim());
  expect(scans.filter((s) => s.startsWith("Seq Scan"))).toEqual([]);
  expect(nodes.map((n) => n["Index Name"])).toContain(index);
});
