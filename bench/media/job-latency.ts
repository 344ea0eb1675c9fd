/**
 * The job-latency part of `pnpm bench:media`: how long an accepted job waits before a worker starts it,
 * through the real system (billing-ledger, files, media-jobs with its worker, gateway: each its own
 * process, as `npm start` runs them, on fresh databases and a fresh vhost).
 *
 * A job is accepted when its `queued` state and its message commit (the 202 follows); it is running when
 * a worker's guarded claim commits. Both instants are read from the media-jobs database (`queued_at`,
 * `started_at`, one machine's clock), so the figure is the path in between: the outbox relay woken by the
 * commit, the publish with its confirm, the delivery, and the claim. The jobs are short text analyses, so
 * the worker is never the bottleneck:
 * - one at a time: each job submitted after the previous one finished (an idle system);
 * - steady: BENCH_JOB_RATE jobs per second (default 5) for BENCH_JOB_SECONDS (default 20), not waiting.
 * - an upstream edit: BENCH_UPSTREAM_EDITS (default 50) image edits one at a time on an `openai-images`
 *   model against the fake upstream (multipart out, the image back in base64), with their whole time
 *   from acceptance to the final commit (the upstream call, the result stored through the files service).
 * Also the client's POST round trip (validation, pricing, claim and hold, queued commit, through the gateway).
 * Env: BENCH_JOBS (one-at-a-time jobs, default 200).
 */
import os from "node:os";
import sharp from "sharp";
import type { JobRecord } from "@meter/contracts";
import { startMediaSystem, TEXT_MODEL, type MediaSystem } from "@meter/testing";

const SEQUENTIAL = Number(process.env.BENCH_JOBS ?? 200);
const RATE = Number(process.env.BENCH_JOB_RATE ?? 5);
const SECONDS = Number(process.env.BENCH_JOB_SECONDS ?? 20);
const UPSTREAM_EDITS = Number(process.env.BENCH_UPSTREAM_EDITS ?? 50);
const UPSTREAM_EDIT_MODEL = "bench-upstream-edit";
const TARGET = { p50: 50, p95: 250 };

export interface LatencyRow {
  name: string;
  jobs: number;
  /** Accepted (queued) -> running, ms. */
  p50: number;
  p95: number;
  max: number;
  /** The client's POST, ms. */
  postP50: number;
  /** Accepted -> final (its outcome committed), ms. */
  finalP50: number;
  finalP95: number;
  ok: boolean;
}

export async function runJobLatencyBenchmark(log: (line: string) => void = console.error): Promise<LatencyRow[]> {
  log("job latency: starting billing-ledger, files, media-jobs (API and worker) and the gateway");
  const system = await startMediaSystem({ LOG_LEVEL: "error" });
  try {
    const { key } = await system.sut.account();
    const rows: LatencyRow[] = [];

    const oneAtATime: Submitted[] = [];
    for (let i = 0; i < SEQUENTIAL; i++) {
      const job = await submit(system, key, i);
      oneAtATime.push(job);
      await waitUntilFinal(system, job.id);
    }
    rows.push(await row(system, "one at a time", oneAtATime));
    log(`one at a time: ${describe(rows.at(-1)!)}`);

    const steady: Promise<Submitted>[] = [];
    const total = RATE * SECONDS;
    const start = Date.now();
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / RATE;
      if (due > Date.now()) await sleep(due - Date.now());
      steady.push(submit(system, key, SEQUENTIAL + i));
    }
    const submitted = await Promise.all(steady);
    for (const job of submitted) await waitUntilFinal(system, job.id);
    rows.push(await row(system, `steady ${RATE} jobs/s`, submitted));
    log(`steady: ${describe(rows.at(-1)!)}`);

    await system.sut.admin("PUT", `/admin/v1/models/${UPSTREAM_EDIT_MODEL}`, {
      enabled: true,
      provider: { kind: "openai-images", base_url: system.sut.fake.openaiBaseUrl, upstream_model: "gpt-image-1", api_key_env: "FAKE_UPSTREAM_API_KEY" },
      operations: { image_edit: { unit: "request", price_per_unit_microrub: 300_000 } },
    });
    const image = await sharp({ create: { width: 512, height: 384, channels: 3, background: { r: 90, g: 140, b: 60 } } })
      .png()
      .toBuffer();
    const fileId = await system.upload(key, image, "image/png", "bench.png");
    const edits: Submitted[] = [];
    for (let i = 0; i < UPSTREAM_EDITS; i++) {
      const job = await submitEdit(system, key, fileId, i);
      edits.push(job);
      await waitUntilFinal(system, job.id);
    }
    rows.push(await row(system, "upstream edit (fake Images API), one at a time", edits));
    log(`upstream edit: ${describe(rows.at(-1)!)}`);
    return rows;
  } finally {
    await system.close();
  }
}

export function printLatencyTable(rows: LatencyRow[]): void {
  console.log(
    `\n| job start latency (accepted -> running) | jobs | p50 ms | p95 ms | max ms | POST p50 ms | accepted -> final p50 / p95 ms | target (p50 / p95) | |`,
  );
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const r of rows) {
    console.log(
      `| ${r.name} | ${r.jobs} | ${r.p50} | ${r.p95} | ${r.max} | ${r.postP50} | ${r.finalP50} / ${r.finalP95} | ${TARGET.p50} / ${TARGET.p95} | ${r.ok ? "ok" : "over target"} |`,
    );
  }
  console.log(
    `\nload average now: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")} (${os.availableParallelism()} cores)\n`,
  );
}

interface Submitted {
  id: string;
  postMs: number;
}

async function submit(system: MediaSystem, key: string, n: number): Promise<Submitted> {
  const t0 = performance.now();
  const res = await system.submit(key, "/v1/text/analysis", { model: TEXT_MODEL, input: `Latency probe number ${n}.`, settings: { tasks: ["statistics"] } });
  const postMs = performance.now() - t0;
  if (res.status !== 202) throw new Error(`job ${n} was not accepted: ${res.status} ${JSON.stringify(res.json)}`);
  return { id: (res.json as JobRecord).id, postMs };
}

async function submitEdit(system: MediaSystem, key: string, fileId: string, n: number): Promise<Submitted> {
  const t0 = performance.now();
  const res = await system.submit(key, "/v1/images/edits", {
    model: UPSTREAM_EDIT_MODEL,
    file_id: fileId,
    prompt: `Make it look like an oil painting, take ${n}`,
  });
  const postMs = performance.now() - t0;
  if (res.status !== 202) throw new Error(`edit ${n} was not accepted: ${res.status} ${JSON.stringify(res.json)}`);
  return { id: (res.json as JobRecord).id, postMs };
}

async function waitUntilFinal(system: MediaSystem, id: string): Promise<void> {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    const { rows } = await system.db.query<{ state: string }>("SELECT state FROM media_jobs WHERE id = $1", [id]);
    if (rows[0]?.state === "succeeded" || rows[0]?.state === "failed") return;
    await sleep(5);
  }
  throw new Error(`job ${id} did not finish within 60 s`);
}

async function row(system: MediaSystem, name: string, jobs: Submitted[]): Promise<LatencyRow> {
  const { rows } = await system.db.query<{ ms: number; final_ms: number; state: string }>(
    `SELECT EXTRACT(EPOCH FROM (started_at - queued_at)) * 1000 AS ms, EXTRACT(EPOCH FROM (completed_at - queued_at)) * 1000 AS final_ms, state
     FROM media_jobs WHERE id = ANY($1::uuid[])`,
    [jobs.map((j) => j.id)],
  );
  const failed = rows.filter((r) => r.state !== "succeeded").length;
  if (failed > 0) throw new Error(`${name}: ${failed} of ${rows.length} jobs did not succeed`);
  const latencies = rows.map((r) => Math.max(0, Number(r.ms))).sort((a, b) => a - b);
  const finals = rows.map((r) => Math.max(0, Number(r.final_ms))).sort((a, b) => a - b);
  const posts = jobs.map((j) => j.postMs).sort((a, b) => a - b);
  const p50 = percentile(latencies, 0.5);
  const p95 = percentile(latencies, 0.95);
  return {
    name,
    jobs: jobs.length,
    p50,
    p95,
    max: Math.round(latencies.at(-1) ?? 0),
    postP50: percentile(posts, 0.5),
    finalP50: percentile(finals, 0.5),
    finalP95: percentile(finals, 0.95),
    ok: p50 <= TARGET.p50 && p95 <= TARGET.p95,
  };
}

function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!);
}

function describe(r: LatencyRow): string {
  return `p50 ${r.p50} ms, p95 ${r.p95} ms, max ${r.max} ms over ${r.jobs} jobs (POST p50 ${r.postP50} ms)`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
