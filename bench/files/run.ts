/**
 * `pnpm bench:files`: upload throughput through the signed link, against a direct PUT to the same
 * local object store, and the files service's peak memory for two file sizes.
 *
 * Starts everything it needs and stops it again: s3rver (any port, temporary folder), a PostgreSQL
 * database with the files migrations, a RabbitMQ vhost, the files API (src/main.ts) and the gateway
 * (gateway/src/main.ts) as child processes, exactly as `npm start` runs them. The file records are
 * created directly on the files service with a signed key identity (no billing needed); the PUTs go
 * (a) straight to the object store, (b) to the files service, (c) through the gateway to it.
 *
 * The files service (and the gateway in front of it) is started again for each file size, so its RSS
 * high-water mark (VmHWM in /proc/<pid>/status) belongs to that size alone; the baseline is its RSS
 * after a 1 MiB warm-up upload. Each process takes any port and reports it (startServiceProcess).
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { deployMigrations, dropDatabase, ensureDatabase, withDatabaseName } from "@meter/db-tools";
import { repoRoot, startObjectStore, type ObjectStoreHandle } from "@meter/local-infra";
import { UNSIGNED_PAYLOAD } from "@meter/contracts";
import { createTestVhost, signedCall, startServiceProcess, testAuth, testKeyEnv } from "@meter/testing";
import { cleanupOnExit } from "../cleanup";

const MiB = 1024 * 1024;
const SIZES = [10 * MiB, 50 * MiB];
const REPEATS = 3;
const BUCKET = "meter-files-bench";

interface Timed {
  seconds: number;
  status: number;
  body: string;
}

async function main(): Promise<void> {
  const root = repoRoot();
  const cleanup = cleanupOnExit();
  try {
    const dataDir = await mkdtemp(path.join(tmpdir(), "meter-files-bench-"));
    cleanup.add(() => rm(dataDir, { recursive: true, force: true }));
    const store = await startObjectStore({ port: 0, buckets: [BUCKET], dataDir });
    cleanup.add(() => store.stop());
    const databaseUrl = withDatabaseName("postgresql://postgres@127.0.0.1:5432/postgres", `meter_files_bench_${randomBytes(4).toString("hex")}`);
    await ensureDatabase(databaseUrl);
    cleanup.add(() => dropDatabase(databaseUrl));
    await deployMigrations({ serviceDir: path.join(root, "services", "files"), databaseUrl });
    const vhost = await createTestVhost();
    cleanup.add(() => vhost.drop());

    const env = {
      LOG_LEVEL: "warn",
      FILES_PORT: "0",
      FILES_DATABASE_URL: databaseUrl,
      RABBITMQ_URL: vhost.url,
      OBJECT_STORE_ENDPOINT: store.endpoint,
      OBJECT_STORE_ACCESS_KEY: store.accessKey,
      OBJECT_STORE_SECRET_KEY: store.secretKey,
      FILES_BUCKET: BUCKET,
      GATEWAY_PORT: "0",
      GATEWAY_INTERNAL_PORT: "0",
      ADMIN_TOKEN: "bench-admin-token-0123456789",
    };

    const rows: string[] = [];
    const memory: string[] = [];
    for (const size of SIZES) {
      // Each takes any port and reports it; the gateway, started second, is told where files is.
      const files = await startServiceProcess(path.join(root, "services", "files", "src", "main.ts"), root, { ...env, ...testKeyEnv("files") }, 60_000);
      const gateway = await startServiceProcess(
        path.join(root, "gateway", "src", "main.ts"),
        root,
        { ...env, ...testKeyEnv("gateway"), FILES_URL: files.url },
        60_000,
      ).catch(async (e: unknown) => {
        await files.stop();
        throw e;
      });
      try {
        // Warm up (first queries, lazily loaded code) so that the baseline is the service ready to work.
        const small = randomBytes(MiB);
        const smallDigest = createHash("sha256").update(small).digest("hex");
        await putThroughLink(files.url, files.url, small, smallDigest, true);
        await putThroughLink(files.url, gateway.url, small, smallDigest, false);
        const idle = await memoryOf(files.pid);
        const content = randomBytes(size);
        const digest = createHash("sha256").update(content).digest("hex");
        const direct: number[] = [];
        const viaFiles: number[] = [];
        const viaGateway: number[] = [];
        for (let i = 0; i < REPEATS; i++) {
          direct.push(await putDirect(store, content));
          viaFiles.push(await putThroughLink(files.url, files.url, content, digest, true));
          viaGateway.push(await putThroughLink(files.url, gateway.url, content, digest, false));
        }
        const peak = await memoryOf(files.pid);
        const mbps = (s: number) => size / 1e6 / s;
        const d = mbps(median(direct));
        const f = mbps(median(viaFiles));
        const g = mbps(median(viaGateway));
        rows.push(
          `| ${size / MiB} MiB | ${d.toFixed(0)} | ${f.toFixed(0)} (${((f / d) * 100).toFixed(0)}%) | ${g.toFixed(0)} (${((g / d) * 100).toFixed(0)}%) |`,
        );
        memory.push(`| ${size / MiB} MiB | ${idle.rssMiB.toFixed(0)} | ${peak.hwmMiB.toFixed(0)} | ${(peak.hwmMiB - idle.rssMiB).toFixed(0)} |`);
      } finally {
        await gateway.stop();
        await files.stop();
      }
    }

    console.log(`\nUpload throughput, MB/s (median of ${REPEATS}; percentage of the direct PUT)\n`);
    console.log("| file | direct PUT to the object store | files service link | gateway -> files service link |");
    console.log("|---|---|---|---|");
    for (const r of rows) console.log(r);
    console.log(`\nFiles service memory (a fresh process per size, ${REPEATS * 2} uploads each), MiB\n`);
    console.log("| file | RSS after a 1 MiB warm-up | RSS high-water mark (VmHWM) | growth |");
    console.log("|---|---|---|---|");
    for (const m of memory) console.log(m);
    console.log("");
  } finally {
    await cleanup.run();
  }
}

/** The baseline: the same bytes PUT straight to s3rver (it accepts unsigned requests). */
async function putDirect(store: ObjectStoreHandle, content: Buffer): Promise<number> {
  const res = await timedPut(
    `${store.endpoint}/${BUCKET}/direct/${randomUUID()}`,
    { "content-type": "application/pdf", "content-length": String(content.length) },
    content,
  );
  if (res.status !== 200) throw new Error(`direct PUT -> ${res.status} ${res.body}`);
  return res.seconds;
}

/** Creates a file on the files service, then PUTs to its link on `uploadOrigin` (the service itself, or the gateway). */
async function putThroughLink(filesOrigin: string, uploadOrigin: string, content: Buffer, digest: string, signAsGateway: boolean): Promise<number> {
  const identity = { kind: "key" as const, key_id: randomUUID(), user_id: randomUUID(), organization_id: randomUUID(), scopes: ["files:write" as const] };
  const body = JSON.stringify({ filename: "bench.pdf", mime_type: "application/pdf", size_bytes: content.length, sha256: digest });
  const signed = signedCall("gateway", "files", identity, "POST", "/v1/files", body);
  const created = await request(`${filesOrigin}/v1/files`, "POST", signed.headers, Buffer.from(body));
  if (created.status !== 201) throw new Error(`create -> ${created.status} ${created.body}`);
  const upload = (JSON.parse(created.body) as { upload: { url: string; headers: Record<string, string> } }).upload;
  const p = new URL(upload.url).pathname;
  // Straight to the service, the PUT carries what the gateway would add: the signed anonymous identity.
  const headers = signAsGateway
    ? { ...upload.headers, ...testAuth("gateway").sign({ kind: "anonymous" }, { audience: "files", method: "PUT", path: p, body: UNSIGNED_PAYLOAD }) }
    : upload.headers;
  const res = await timedPut(uploadOrigin + p, headers, content);
  if (res.status !== 200 || !res.body.includes('"uploaded"')) throw new Error(`upload -> ${res.status} ${res.body}`);
  return res.seconds;
}

async function timedPut(url: string, headers: Record<string, string>, content: Buffer): Promise<Timed> {
  const started = process.hrtime.bigint();
  const res = await request(url, "PUT", headers, content);
  return { ...res, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

function request(url: string, method: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

async function memoryOf(pid: number): Promise<{ rssMiB: number; hwmMiB: number }> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return { rssMiB: kib("VmRSS") / 1024, hwmMiB: kib("VmHWM") / 1024 };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}
main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.stack : String(e));
  process.exit(1);
});
