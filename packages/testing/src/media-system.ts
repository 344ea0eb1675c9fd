import { createHash, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { Pool } from "pg";
import type { JobRecord } from "@meter/contracts";
import { repoRoot } from "@meter/local-infra";
import { startSystemUnderTest, type SystemUnderTest } from "./system-under-test";

const SEED = path.join(repoRoot(), "infra/catalog/models.json");

export const OCR_MODEL = "meter-local-ocr";
export const EDIT_MODEL = "meter-local-image-edit";
export const ANALYSIS_MODEL = "meter-local-image-analysis";
export const DETECTION_MODEL = "meter-local-image-detection";
export const TEXT_MODEL = "meter-local-text-analysis";

export interface HttpAnswer<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  json: T;
}

export interface MediaSystem {
  sut: SystemUnderTest;
  /** The media-jobs database, for tests that look at what the API does not show (attempts, owners). */
  db: Pool;
  call<T = Record<string, unknown>>(key: string, method: string, p: string, body?: unknown, headers?: Record<string, string>): Promise<HttpAnswer<T>>;
  /** The files flow: create, PUT to the upload link, complete; resolves with the id of the verified file. */
  upload(key: string, data: Buffer, mimeType: string, filename?: string): Promise<string>;
  /** POST a job with a fresh (or the given) Idempotency-Key. */
  submit(key: string, p: string, body: unknown, idempotencyKey?: string): Promise<HttpAnswer<JobRecord>>;
  /** Polls the job until `until` holds (default: final). */
  waitForJob(key: string, id: string, until?: (job: JobRecord) => boolean, timeoutMs?: number): Promise<JobRecord>;
  download(key: string, fileId: string): Promise<Buffer>;
  /** The organization's balance once every hold of it is resolved (commands reach billing over the bus). */
  settledBalance(organizationId: string): Promise<{ balance_microrub: number; reserved_microrub: number; available_microrub: number }>;
  close(): Promise<void>;
}

export const isFinal = (job: JobRecord) => job.status === "succeeded" || job.status === "failed";

/**
 * billing-ledger, files (with its worker, an object store and clamd), media-jobs (with its worker) and
 * the gateway, each its own process on fresh databases and a fresh vhost, media turned on, and the
 * catalog seeded as `npm start` seeds it.
 */
export async function startMediaSystem(env: Record<string, string> = {}): Promise<MediaSystem> {
  const sut = await startSystemUnderTest({
    only: ["billing-ledger", "files", "media-jobs", "gateway"],
    env: { MEDIA_ENABLED: "true", MEDIA_JOBS_LEASE_MS: "3000", COMPLETE_WAIT_MS: "20000", ...env },
  });
  const db = new Pool({ connectionString: sut.env.MEDIA_JOBS_DATABASE_URL, max: 2 });
  const seed = JSON.parse(readFileSync(SEED, "utf8")) as Record<string, unknown>;
  for (const [id, model] of Object.entries(seed)) await sut.admin("PUT", `/admin/v1/models/${encodeURIComponent(id)}`, model);

  const call = async <T>(key: string, method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpAnswer<T>> => {
    const res = await fetch(sut.url + p, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: (text ? JSON.parse(text) : {}) as T };
  };

  const system: MediaSystem = {
    sut,
    db,
    call,
    async upload(key, data, mimeType, filename = "input") {
      const created = await call<{ id: string; upload: { url: string; headers: Record<string, string> } }>(key, "POST", "/v1/files", {
        filename,
        mime_type: mimeType,
        size_bytes: data.length,
        sha256: createHash("sha256").update(data).digest("hex"),
      });
      if (created.status !== 201) throw new Error(`POST /v1/files -> ${created.status} ${JSON.stringify(created.json)}`);
      const put = await fetch(created.json.upload.url, { method: "PUT", headers: created.json.upload.headers, body: data });
      if (!put.ok) throw new Error(`upload PUT -> ${put.status} ${await put.text()}`);
      const id = created.json.id;
      const done = await call<{ status: string }>(key, "POST", `/v1/files/${id}/complete`);
      let status = done.json.status;
      for (const deadline = Date.now() + 30_000; status === "verifying" && Date.now() < deadline;) {
        await sleep(100);
        status = (await call<{ status: string }>(key, "GET", `/v1/files/${id}`)).json.status;
      }
      if (status !== "verified") throw new Error(`file ${id} ended ${status}`);
      return id;
    },
    submit: (key, p, body, idempotencyKey = randomUUID()) => call<JobRecord>(key, "POST", p, body, { "idempotency-key": idempotencyKey }),
    async waitForJob(key, id, until = isFinal, timeoutMs = 60_000) {
      let job: JobRecord | undefined;
      await eventually(
        async () => {
          const res = await call<JobRecord>(key, "GET", `/v1/jobs/${id}`);
          if (res.status !== 200) throw new Error(`GET /v1/jobs/${id} -> ${res.status} ${JSON.stringify(res.json)}`);
          job = res.json;
          return until(job);
        },
        timeoutMs,
        `job ${id} to reach the expected state`,
      );
      return job!;
    },
    async download(key, fileId) {
      const res = await fetch(`${sut.url}/v1/files/${fileId}/content`, { headers: { authorization: `Bearer ${key}` } });
      if (!res.ok) throw new Error(`download ${fileId} -> ${res.status} ${await res.text()}`);
      return Buffer.from(await res.arrayBuffer());
    },
    async settledBalance(organizationId) {
      type Balance = { balance_microrub: number; reserved_microrub: number; available_microrub: number };
      let balance: Balance | undefined;
      await eventually(
        async () => {
          balance = await sut.admin<Balance>("GET", `/admin/v1/organizations/${organizationId}/balance`);
          return balance.reserved_microrub === 0;
        },
        20_000,
        `every hold of ${organizationId} to be resolved`,
      );
      return balance!;
    },
    async close() {
      await db.end();
      await sut.close();
    },
  };

  // The API process reloads the catalog every 200 ms here, and the worker warms its engines before it
  // takes a job: a first job that completes says both are ready.
  const probe = await sut.account();
  await eventually(
    async () => (await system.submit(probe.key, "/v1/text/analysis", { model: TEXT_MODEL, input: "Ready?" })).status === 202,
    20_000,
    "the catalog to reach media-jobs",
  );
  const first = await system.submit(probe.key, "/v1/text/analysis", { model: TEXT_MODEL, input: "Ready." });
  await system.waitForJob(probe.key, first.json.id, isFinal, 120_000);
  return system;
}

/** Polls `check` every 50 ms until it holds; fails naming `what` after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await sleep(50);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
