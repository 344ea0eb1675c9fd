import { randomBytes } from "node:crypto";
import { PassThrough } from "node:stream";
import type { FileRecord, KeyIdentity } from "@meter/contracts";
import { chunks, httpRequest, png, sha256, signUpload, startFiles, type FilesHarness, type HttpResult } from "./support/files-harness";
import type { ServiceProcess } from "@meter/testing";

/**
 * Uploads interrupted by a crash (SIGKILL of the files process streaming them), a client that stalls,
 * or a client that goes away: retryable on the same link at once, leftovers deleted, and never a
 * second PUT racing a live one.
 */
let h: FilesHarness;
const CONTENT_BYTES = 64 * 1024;

beforeAll(async () => {
  // Room for one file per user: whether an interrupted upload still counts shows as "a second create fits or not".
  // Completion waits up to 15 s for the verdict (it answers as soon as there is one): every test here
  // expects `verified`, which a loaded machine's worker may take over the harness's 3 s to reach.
  h = await startFiles({
    policy: { quotaBytes: CONTENT_BYTES * 1.5, maxFileBytes: CONTENT_BYTES * 2, uploadLeaseMs: 3_000, uploadIdleTimeoutMs: 2_000, completeWaitMs: 15_000 },
  });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

afterEach(() => {
  h.clock.reset();
});

interface Upload {
  owner: KeyIdentity;
  file: FileRecord;
  content: Buffer;
}

async function created(): Promise<Upload> {
  const owner = h.user();
  const content = png(randomBytes(CONTENT_BYTES - png().length));
  const file = await h.create(owner, { filename: "x.png", mime_type: "image/png", size_bytes: content.length, sha256: sha256(content) });
  return { owner, file, content };
}

/** A PUT to `baseUrl` (this process's API or another one) whose body the test writes itself. */
function openPut(baseUrl: string, file: FileRecord): { body: PassThrough; answer: Promise<HttpResult | { failed: string }> } {
  const p = new URL(file.upload!.url).pathname;
  const body = new PassThrough();
  const headers = { ...file.upload!.headers, ...signUpload(p) };
  return { body, answer: httpRequest(baseUrl + p, "PUT", headers, body).catch((e: Error) => ({ failed: e.message })) };
}

/** A PUT that got no answer: its connection was cut. */
const FAILED = { failed: expect.any(String) as unknown };

async function row(id: string) {
  const found = await h.db.file.findUnique({ where: { id } });
  if (!found) throw new Error(`no file ${id}`);
  return found;
}

/** The database backend holding the file's upload lock: the streaming process's lock session. */
async function lockHolder(fileId: string): Promise<number | undefined> {
  const rows = await h.db.$queryRawUnsafe<{ pid: number }[]>(
    `SELECT l.pid FROM pg_locks l, (SELECT hashtextextended($1, 0) AS k) h
     WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND l.classid::bigint = (h.k >> 32) & 4294967295 AND l.objid::bigint = h.k & 4294967295`,
    `files.upload:${fileId}`,
  );
  return rows[0]?.pid;
}

/**
 * Streams part of the file through another API process and SIGKILLs it mid-body. Resolves once
 * PostgreSQL has seen that process's session end (what "the process is gone" means to every other
 * process), with the object key the dead attempt was writing.
 */
async function killedMidUpload(upload: Upload): Promise<{ killedKey: string }> {
  // However long the steps below take, this process must not give up on the PUT by itself.
  const api: ServiceProcess = await h.startApiProcess({ UPLOAD_IDLE_TIMEOUT_MS: "600000" });
  const put = openPut(api.url, upload.file);
  put.body.write(upload.content.subarray(0, CONTENT_BYTES / 2));
  const streaming = await waitFor(async () => {
    const r = await row(upload.file.id);
    return r.status === "uploading" ? r : undefined;
  });
  expect(streaming.uploadAttemptId).not.toBeNull();
  // Taken before the row says `uploading`.
  const holder = await lockHolder(upload.file.id);

  // Alive in another process: a second PUT is refused, never raced.
  const raced = openPut(h.url, upload.file);
  const refused = await raced.answer;
  raced.body.destroy();
  expect(refused).toMatchObject({ status: 409, json: { error: expect.objectContaining({ code: "conflict" }) } });
  expect((await h.complete(upload.owner, upload.file.id)).status).toBe(409);

  await api.kill();
  expect(await put.answer).toMatchObject(FAILED);
  // "At once" is when PostgreSQL has seen the process go (milliseconds): its lock session has ended.
  if (holder !== undefined) {
    await waitFor(async () => {
      const alive = await h.db.$queryRawUnsafe<unknown[]>("SELECT 1 FROM pg_stat_activity WHERE pid = $1", holder);
      return alive.length === 0 ? true : undefined;
    });
  }
  // A store may keep part of a PUT cut short (S3 does not, others might): leave some to be cleaned up.
  const partial = upload.content.subarray(0, 1000);
  await h.objects.put(streaming.objectKey, chunks(partial), partial.length, "image/png");
  return { killedKey: streaming.objectKey };
}

describe("a PUT whose process was killed", () => {
  it("can be retried on the same link at once; the dead attempt's object is deleted", async () => {
    const upload = await created();
    const { killedKey } = await killedMidUpload(upload);

    const retry = await h.put(upload.file.upload!.url, upload.file.upload!.headers, upload.content);
    expect([retry.status, retry.json.status]).toEqual([200, "uploaded"]);
    expect(await h.objects.stat(killedKey)).toBeUndefined();
    const stored = await row(upload.file.id);
    expect(stored.objectKey).not.toBe(killedKey);
    expect(await h.objects.stat(stored.objectKey)).toEqual({ size: upload.content.length });
    expect(stored).toMatchObject({ uploadAttemptId: null, uploadLeaseExpiresAt: null });
    expect((await h.complete(upload.owner, upload.file.id)).body.status).toBe("verified");
  }, 60_000);

  it("does not block completion: the file completes as one never uploaded", async () => {
    const upload = await created();
    const { killedKey } = await killedMidUpload(upload);

    const done = await h.complete(upload.owner, upload.file.id);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: "rejected", rejection: { code: "upload_missing" } });
    expect(await h.objects.stat(killedKey)).toBeUndefined();
  }, 60_000);

  it("counts against the quota only while it can still be completed", async () => {
    const upload = await created();
    const { killedKey } = await killedMidUpload(upload);
    const another = { filename: "y.png", mime_type: "image/png" as const, size_bytes: CONTENT_BYTES, sha256: "d".repeat(64) };

    // The link lives: a retry can still complete it.
    expect((await h.call("POST", "/v1/files", upload.owner, another)).status).toBe(422);

    // Link dead and nobody streaming: gone at once, before any sweep, and its share freed.
    h.clock.advance(300_001);
    expect((await h.call("GET", `/v1/files/${upload.file.id}`, upload.owner)).status).toBe(404);
    expect((await h.call("POST", "/v1/files", upload.owner, another)).status).toBe(201);
    await h.retention.sweep();
    expect((await row(upload.file.id)).status).toBe("expired");
    expect(await h.objects.stat(killedKey)).toBeUndefined();
  }, 60_000);
});

describe("a PUT that is still alive", () => {
  it("keeps its claim while the bytes flow, however long that takes", async () => {
    const upload = await created();
    const put = openPut(h.url, upload.file);
    let sent = 0;
    const send = (n: number) => {
      put.body.write(upload.content.subarray(sent, sent + n));
      sent += n;
    };
    send(1024);
    const first = await waitFor(async () => (await row(upload.file.id)).uploadLeaseExpiresAt ?? undefined);
    // A byte on every poll keeps it from stalling while its lease is renewed.
    await waitFor(async () => {
      send(1);
      const lease = (await row(upload.file.id)).uploadLeaseExpiresAt;
      return lease && lease > first ? true : undefined;
    });
    const raced = await h.put(upload.file.upload!.url, upload.file.upload!.headers, Buffer.alloc(0));
    expect(raced.status).toBe(409);
    put.body.end(upload.content.subarray(sent));
    expect(await put.answer).toMatchObject({ status: 200, json: { status: "uploaded" } });
  }, 30_000);
});

describe("a PUT whose upload lock is lost", () => {
  it("stops at once (another PUT may take the file now) and leaves the link usable", async () => {
    const upload = await created();
    const put = openPut(h.url, upload.file);
    put.body.write(upload.content.subarray(0, 1000));
    await waitFor(async () => ((await row(upload.file.id)).status === "uploading" ? true : undefined));
    const holder = await waitFor(() => lockHolder(upload.file.id));

    // The database ends this process's lock session (a failover, a network cut): the lock is gone.
    await h.db.$queryRawUnsafe("SELECT pg_terminate_backend($1)", holder);
    expect(await put.answer).toMatchObject(FAILED);
    await waitFor(async () => ((await row(upload.file.id)).status === "awaiting_upload" ? true : undefined));
    const retry = await h.put(upload.file.upload!.url, upload.file.upload!.headers, upload.content);
    expect([retry.status, retry.json.status]).toEqual([200, "uploaded"]);
  }, 30_000);
});

describe("a PUT whose client does not finish", () => {
  it("is stopped when the body stalls, and the link works again", async () => {
    const upload = await created();
    const put = openPut(h.url, upload.file);
    put.body.write(upload.content.subarray(0, 1000));
    const attempt = await waitFor(async () => (await row(upload.file.id)).uploadAttemptId ?? undefined);

    // The client sends nothing more but keeps its connection open.
    await waitFor(async () => ((await row(upload.file.id)).status === "awaiting_upload" ? true : undefined));
    expect(await put.answer).toMatchObject(FAILED);
    expect(await h.objects.stat(`uploads/${upload.file.id}/${attempt}`)).toBeUndefined();
    const retry = await h.put(upload.file.upload!.url, upload.file.upload!.headers, upload.content);
    expect([retry.status, retry.json.status]).toEqual([200, "uploaded"]);
  }, 30_000);

  it("claimed by an older version (no attempt, no lease) is never taken over", async () => {
    const upload = await created();
    await h.db.file.update({ where: { id: upload.file.id }, data: { status: "uploading", uploadStartedAt: h.clock.now() } });
    const refused = await h.put(upload.file.upload!.url, upload.file.upload!.headers, Buffer.alloc(0));
    expect([refused.status, refused.json.error]).toEqual([409, expect.objectContaining({ code: "conflict" })]);
    expect((await h.complete(upload.owner, upload.file.id)).status).toBe(409);
    expect(await row(upload.file.id)).toMatchObject({ status: "uploading", uploadAttemptId: null });
  });
});

/** Polls `check` until it gives a value. */
async function waitFor<T>(check: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 25));
  }
}
