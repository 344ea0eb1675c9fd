import { randomUUID } from "node:crypto";
import { chunks, png, sha256, startFiles, type FilesHarness } from "./support/files-harness";

/** Expiry and the sweeper, with the clock moved instead of waited for. */
let h: FilesHarness;
const DAY = 24 * 3_600_000;

beforeAll(async () => {
  // A quota of one small file per user makes "freed" visible as "a new create fits again".
  h = await startFiles({ policy: { quotaBytes: 1_000, maxFileBytes: 1_000 } });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

afterEach(() => {
  h.clock.reset();
});

const request = (size = 600) => ({ filename: "a.png", mime_type: "image/png" as const, size_bytes: size, sha256: "c".repeat(64) });

it("an upload link never used expires after 300 s and frees its quota", async () => {
  const user = h.user();
  const file = await h.create(user, request());
  expect((await h.call("POST", "/v1/files", user, request())).status).toBe(422);
  h.clock.advance(300_001);
  // Freed and gone at once, before any sweep.
  expect((await h.call("GET", `/v1/files/${file.id}`, user)).status).toBe(404);
  expect((await h.call("POST", "/v1/files", user, request())).status).toBe(201);
  await h.retention.sweep();
  expect((await h.repository.find(file.id))?.status).toBe("expired");
});

it("a file expires 7 days after creation: record gone, object deleted, quota freed", async () => {
  const user = h.user();
  const content = png();
  const file = await h.uploaded(user, content, "image/png");
  expect((await h.complete(user, file.id)).body.status).toBe("verified");
  const key = (await h.repository.find(file.id))!.objectKey;

  h.clock.advance(7 * DAY - 60_000);
  expect((await h.call("GET", `/v1/files/${file.id}`, user)).status).toBe(200);
  await h.retention.sweep();
  expect(await h.objects.stat(key)).toEqual({ size: content.length });

  h.clock.advance(60_001);
  expect((await h.call("GET", `/v1/files/${file.id}`, user)).status).toBe(404);
  const swept = await h.retention.sweep();
  expect(swept.expired).toBeGreaterThanOrEqual(1);
  expect(await h.objects.stat(key)).toBeUndefined();
  const row = await h.db.file.findUnique({ where: { id: file.id } });
  expect(row).toMatchObject({ status: "expired" });
  expect(row?.objectPurgedAt).not.toBeNull();
  expect((await h.call("POST", "/v1/files", user, request(1_000))).status).toBe(201);
});

it("an upload whose PUT died expires once both its link and its lease are over, and its object is deleted", async () => {
  const user = h.user();
  const file = await h.create(user, request());
  // As a PUT in a process that then died leaves it: claimed under an attempt, part of the bytes stored.
  const attemptId = randomUUID();
  const key = `uploads/${file.id}/${attemptId}`;
  const partial = Buffer.from("part of the bytes");
  await h.objects.put(key, chunks(partial), partial.length, "image/png");
  const now = h.clock.now();
  await h.db.file.update({
    where: { id: file.id },
    data: {
      status: "uploading",
      uploadStartedAt: now,
      uploadAttemptId: attemptId,
      uploadStreamer: "gone/1",
      uploadLeaseExpiresAt: new Date(now.getTime() + 400_000),
      objectKey: key,
    },
  });

  // The link is dead but the lease says a PUT is still streaming: it may yet finish, so it stays and counts.
  h.clock.advance(300_001);
  await h.retention.sweep();
  expect((await h.repository.find(file.id))?.status).toBe("uploading");
  expect((await h.call("GET", `/v1/files/${file.id}`, user)).status).toBe(200);
  expect((await h.call("POST", "/v1/files", user, request())).status).toBe(422);

  // Nobody renewed the lease: the upload can never complete.
  h.clock.advance(100_000);
  expect((await h.call("GET", `/v1/files/${file.id}`, user)).status).toBe(404);
  expect((await h.call("POST", "/v1/files", user, request())).status).toBe(201);
  await h.retention.sweep();
  expect((await h.repository.find(file.id))?.status).toBe("expired");
  expect(await h.objects.stat(key)).toBeUndefined();
});

it("deletes objects whose immediate deletion did not happen (rejected, deleted)", async () => {
  const user = h.user();
  const file = await h.uploaded(user, png(), "image/png");
  const key = (await h.repository.find(file.id))!.objectKey;
  // As if the worker had died between its verdict and deleting the object.
  await h.db.file.update({ where: { id: file.id }, data: { status: "rejected", rejectionCode: "malware_detected", rejectedAt: h.clock.now() } });
  expect(await h.objects.stat(key)).toBeDefined();
  await h.retention.sweep();
  expect(await h.objects.stat(key)).toBeUndefined();
  expect((await h.db.file.findUnique({ where: { id: file.id } }))?.objectPurgedAt).not.toBeNull();
});

it("is safe on several replicas at once: each due file is expired and purged exactly once", async () => {
  const users = Array.from({ length: 30 }, () => h.user());
  const ids: string[] = [];
  for (const user of users) {
    const content = png(Buffer.from(user.user_id));
    const file = await h.uploaded(user, content, "image/png", { sha256: sha256(content) });
    ids.push(file.id);
  }
  h.clock.advance(7 * DAY + 1);
  // Due now: this test's files and some that earlier tests left.
  const now = h.clock.now();
  const dueWhere = {
    status: { notIn: ["deleted" as const, "expired" as const] },
    OR: [{ expiresAt: { lte: now } }, { status: "awaiting_upload" as const, uploadExpiresAt: { lte: now } }],
  };
  const due = await h.db.file.count({ where: dueWhere });
  const objects = await h.db.file.count({
    where: { objectPurgedAt: null, OR: [{ status: { in: ["rejected", "deleted", "expired"] } }, dueWhere] },
  });
  expect(due).toBeGreaterThanOrEqual(ids.length);
  const results = await Promise.all([h.retention.sweep(), h.retention.sweep(), h.retention.sweep()]);
  expect(results.reduce((n, r) => n + r.expired, 0)).toBe(due);
  expect(results.reduce((n, r) => n + r.purged, 0)).toBe(objects);
  const rows = await h.db.file.findMany({ where: { id: { in: ids } } });
  expect(rows.every((r) => r.status === "expired" && r.objectPurgedAt !== null)).toBe(true);
  expect(await h.retention.sweep()).toEqual({ expired: 0, purged: 0, requeued: 0 });
});
