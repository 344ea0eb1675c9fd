import type { CreateFileRequest, FileRecord } from "@meter/contracts";
import { png, sha256, startFiles, type FilesHarness } from "./support/files-harness";

/** Creation rules, the quota, reading, listing, downloading and deleting, on the real stack. */
let h: FilesHarness;

beforeAll(async () => {
  h = await startFiles({ policy: { maxFileBytes: 1024 * 1024, quotaBytes: 10_000_000_000 } });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

/** A valid creation request, with fields replaced (possibly by invalid values) for the case at hand. */
const valid = (over: Record<string, unknown> = {}): CreateFileRequest =>
  ({ filename: "cat.png", mime_type: "image/png", size_bytes: 1000, sha256: "a".repeat(64), ...over }) as CreateFileRequest;

describe("POST /v1/files", () => {
  it("answers 201 with the record and a signed upload link", async () => {
    const user = h.user();
    const before = Date.now();
    const res = await h.call("POST", "/v1/files", user, valid());
    expect(res.status).toBe(201);
    const file = res.body as FileRecord;
    expect(file).toMatchObject({
      object: "file",
      purpose: "upload",
      filename: "cat.png",
      mime_type: "image/png",
      size_bytes: 1000,
      sha256: "a".repeat(64),
      status: "awaiting_upload",
    });
    expect(file.id).toMatch(/^[0-9a-f-]{36}$/);
    const created = Date.parse(file.created_at);
    expect(created).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(file.expires_at) - created).toBe(7 * 24 * 3_600_000);
    expect(file.upload).toMatchObject({
      method: "PUT",
      headers: { "content-type": "image/png", "content-length": "1000", "x-content-sha256": "a".repeat(64) },
    });
    // No PUBLIC_BASE_URL or GATEWAY_URL in this test's settings: the local gateway's default origin.
    expect(file.upload!.url).toMatch(/^http:\/\/127\.0\.0\.1:8080\/v1\/uploads\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(file.upload!.expires_at) - created).toBe(300_000);
  });

  it("builds the link on the configured origin, whatever Host and X-Forwarded-* the request carries", async () => {
    const res = await h
      .call("POST", "/v1/files", h.user(), valid())
      .set("host", "attacker.example")
      .set("x-forwarded-proto", "https")
      .set("x-forwarded-host", "attacker.example");
    expect(res.status).toBe(201);
    expect((res.body as FileRecord).upload!.url).toMatch(/^http:\/\/127\.0\.0\.1:8080\/v1\/uploads\//);
  });

  it.each([
    ["a right-to-left override (gnp.exe shown as exe.png)", "invoice\u202Egnp.exe", "U+202E"],
    ["a right-to-left mark", "a\u200F.png", "U+200F"],
    ["a left-to-right isolate", "\u2066a.png", "U+2066"],
    ["a pop directional isolate", "a.png\u2069", "U+2069"],
    ["a byte order mark", "\uFEFFa.png", "U+FEFF"],
    ["a zero-width space", "a\u200B.png", "U+200B"],
    ["a C1 control character", "a\u0085.png", "U+0085"],
    ["a line separator", "a\u2028.png", "U+2028"],
    ["a lone surrogate", "a\uD800.png", "U+D800"],
  ])("refuses a name with %s: 400 invalid_request naming the character, nothing kept", async (_what, filename, codePoint) => {
    const owner = h.user();
    const res = await h.call("POST", "/v1/files", owner, valid({ filename }));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("invalid_request");
    expect(res.body.error.message).toBe(`filename: must not contain control or invisible formatting characters (found ${codePoint})`);
    expect((await h.call("GET", "/v1/files", owner)).body.data).toEqual([]);
  });

  it("accepts a name in any script, with accents and emoji", async () => {
    const res = await h.call("POST", "/v1/files", h.user(), valid({ filename: "Счёт №5 — café 😀.png" }));
    expect(res.status).toBe(201);
    expect((res.body as FileRecord).filename).toBe("Счёт №5 — café 😀.png");
  });

  it.each([
    ["a missing field", { sha256: undefined }, "invalid_request"],
    ["an unknown field", { purpose: "x" }, "unknown_field"],
    ["an empty name", { filename: "" }, "invalid_request"],
    ["a name over 255 characters", { filename: "a".repeat(256) }, "invalid_request"],
    ["a path as name", { filename: "../etc/passwd" }, "invalid_request"],
    ["a control character in the name", { filename: "a\nb.png" }, "invalid_request"],
    ["an empty MIME type", { mime_type: "" }, "invalid_request"],
    ["size 0", { size_bytes: 0 }, "invalid_request"],
    ["a fractional size", { size_bytes: 1.5 }, "invalid_request"],
    ["a size as a string", { size_bytes: "1000" }, "invalid_request"],
    ["an uppercase hash", { sha256: "A".repeat(64) }, "invalid_request"],
    ["a short hash", { sha256: "a".repeat(63) }, "invalid_request"],
  ])("refuses %s with 400", async (_what, over, code) => {
    const res = await h.call("POST", "/v1/files", h.user(), valid(over));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(code);
  });

  it.each([
    ["a MIME type not allowed", { mime_type: "image/bmp" }, 415, "unsupported_media_type"],
    ["a result-only MIME type", { mime_type: "application/json" }, 415, "unsupported_media_type"],
    ["a size over MAX_FILE_BYTES", { size_bytes: 1024 * 1024 + 1 }, 413, "payload_too_large"],
  ])("refuses %s (%i %s), keeping nothing", async (_what, over, status, code) => {
    const owner = h.user();
    const res = await h.call("POST", "/v1/files", owner, valid(over));
    expect({ status: res.status, code: res.body.error.code }).toEqual({ status, code });
    expect((await h.call("GET", "/v1/files", owner)).body.data).toEqual([]);
  });

  it("accepts unicode names and the largest allowed size", async () => {
    const res = await h.call(
      "POST",
      "/v1/files",
      h.user(),
      valid({ filename: "отчёт 2024 (final).pdf", mime_type: "application/pdf", size_bytes: 1024 * 1024 }),
    );
    expect(res.status).toBe(201);
  });

  it("refuses a body that is not JSON", async () => {
    const res = await h.call("POST", "/v1/files", h.user()).set("content-type", "text/plain").send("hello");
    expect(res.status).toBe(415);
  });

  it("refuses callers that are not key holders", async () => {
    const anonymous = await h.call("POST", "/v1/files", { kind: "anonymous" }, valid());
    expect(anonymous.status).toBe(403);
    const unsigned = await h.call("GET", "/v1/files", h.user()).set("x-meter-signature", "0".repeat(64));
    expect(unsigned.status).toBe(401);
  });
});

describe("reading, listing, deleting", () => {
  it("never shows one user's file to another", async () => {
    const owner = h.user();
    const other = h.user();
    const file = await h.uploaded(owner, png(), "image/png");
    for (const [method, p] of [
      ["GET", `/v1/files/${file.id}`],
      ["GET", `/v1/files/${file.id}/content`],
      ["POST", `/v1/files/${file.id}/complete`],
      ["DELETE", `/v1/files/${file.id}`],
    ] as const) {
      const res = await h.call(method, p, other);
      expect([p, res.status, res.body.error?.code]).toEqual([p, 404, "file_not_found"]);
    }
    const list = await h.call("GET", "/v1/files", other);
    expect(list.body.data).toEqual([]);
    // The same person in another organization is the same user: quota and files are per user.
    const sameUser = await h.call("GET", `/v1/files/${file.id}`, { ...owner, organization_id: h.user().organization_id, key_id: h.user().key_id });
    expect(sameUser.status).toBe(200);
  });

  it("answers 404 for ids that are not UUIDs or do not exist", async () => {
    const user = h.user();
    expect((await h.call("GET", "/v1/files/not-a-uuid", user)).status).toBe(404);
    expect((await h.call("GET", `/v1/files/${crypto.randomUUID()}`, user)).body.error.code).toBe("file_not_found");
  });

  it("refuses to serve content before verification (409 file_not_verified)", async () => {
    const user = h.user();
    const created = await h.create(user, valid());
    const res = await h.call("GET", `/v1/files/${created.id}/content`, user);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("file_not_verified");
    const uploaded = await h.uploaded(user, png(), "image/png");
    expect((await h.call("GET", `/v1/files/${uploaded.id}/content`, user)).body.error.code).toBe("file_not_verified");
  });

  it("serves a verified file's bytes with its type and length", async () => {
    const user = h.user();
    const content = png();
    const file = await h.uploaded(user, content, "image/png", { filename: 'фото "1".png' });
    expect((await h.complete(user, file.id)).body.status).toBe("verified");
    const res = await h
      .call("GET", `/v1/files/${file.id}/content`, user)
      .buffer(true)
      .parse((r, cb) => {
        const chunks: Buffer[] = [];
        r.on("data", (c: Buffer) => chunks.push(c));
        r.on("end", () => cb(null, Buffer.concat(chunks)));
      });
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("image/png");
    expect(res.headers["content-length"]).toBe(String(content.length));
    expect(res.headers["content-disposition"]).toBe(`attachment; filename="____ _1_.png"; filename*=UTF-8''%D1%84%D0%BE%D1%82%D0%BE%20%221%22.png`);
    expect(Buffer.compare(res.body as Buffer, content)).toBe(0);
  });

  it("lists the user's files newest first, in pages", async () => {
    const user = h.user();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await h.create(user, valid({ filename: `f${i}.png` }))).id);
    await h.create(h.user(), valid());
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await h.call("GET", `/v1/files?limit=2${cursor ? `&cursor=${cursor}` : ""}`, user);
      expect(res.status).toBe(200);
      expect(res.body.object).toBe("list");
      seen.push(...(res.body.data as FileRecord[]).map((f) => f.id));
      expect(res.body.has_more).toBe(res.body.next_cursor !== null);
      cursor = res.body.next_cursor as string | null;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].reverse());
    const first = (await h.call("GET", "/v1/files", user)).body as { data: FileRecord[] };
    expect(first.data[0]?.upload).toBeUndefined();
  });

  it("refuses bad list parameters", async () => {
    const user = h.user();
    expect((await h.call("GET", "/v1/files?limit=0", user)).status).toBe(400);
    expect((await h.call("GET", "/v1/files?limit=101", user)).status).toBe(400);
    expect((await h.call("GET", "/v1/files?cursor=garbage", user)).status).toBe(400);
    expect((await h.call("GET", "/v1/files?order=asc", user)).body.error.code).toBe("unknown_field");
  });

  it("deletes a file: gone for its owner, object removed, quota freed", async () => {
    const user = h.user();
    const file = await h.uploaded(user, png(), "image/png");
    expect((await h.complete(user, file.id)).body.status).toBe("verified");
    const row = await h.repository.find(file.id);
    expect(await h.objects.stat(row!.objectKey)).toEqual({ size: png().length });

    const res = await h.call("DELETE", `/v1/files/${file.id}`, user);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: file.id, object: "file", deleted: true });
    expect(await h.objects.stat(row!.objectKey)).toBeUndefined();
    expect((await h.call("GET", `/v1/files/${file.id}`, user)).status).toBe(404);
    expect((await h.call("DELETE", `/v1/files/${file.id}`, user)).status).toBe(404);
    expect((await h.call("GET", "/v1/files", user)).body.data).toEqual([]);
  });
});

describe("the quota", () => {
  const QUOTA = 10_000_000_000;
  const MAX = 50 * 1024 * 1024;

  it("admits exactly what fits when 20 creates race against a nearly full quota", async () => {
    const user = h.user();
    const size = 1024 * 1024;
    // Room for 7 more files of 1 MiB and half of an eighth.
    const seeded = QUOTA - 7 * size - size / 2;
    const admissible = 7;
    h.policy.maxFileBytes = MAX;
    try {
      await seedUsage(user.user_id, seeded);
      const results = await Promise.all(Array.from({ length: 20 }, () => h.call("POST", "/v1/files", user, valid({ size_bytes: size }))));
      const created = results.filter((r) => r.status === 201).length;
      const refused = results.filter((r) => r.status === 422 && r.body.error.code === "file_quota_exceeded").length;
      expect(created).toBe(admissible);
      expect(refused).toBe(20 - admissible);
      expect(await usedBytes(user.user_id)).toBeLessThanOrEqual(QUOTA);
      expect(await usedBytes(user.user_id)).toBe(seeded + admissible * size);
    } finally {
      h.policy.maxFileBytes = 1024 * 1024;
    }
  });

  it("counts across the user's organizations, and frees on delete", async () => {
    const user = h.user();
    await seedUsage(user.user_id, QUOTA - 1500);
    const first = await h.create(user, valid({ size_bytes: 1000 }));
    const otherOrg = { ...user, organization_id: h.user().organization_id };
    const refused = await h.call("POST", "/v1/files", otherOrg, valid({ size_bytes: 1000 }));
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe("file_quota_exceeded");
    expect((await h.call("DELETE", `/v1/files/${first.id}`, user)).status).toBe(200);
    expect((await h.call("POST", "/v1/files", otherOrg, valid({ size_bytes: 1000 }))).status).toBe(201);
  });

  it("frees a rejected file's share", async () => {
    const user = h.user();
    const content = png();
    await seedUsage(user.user_id, QUOTA - content.length);
    const file = await h.uploaded(user, content, "application/pdf");
    expect((await h.call("POST", "/v1/files", user, valid({ size_bytes: 1 }))).status).toBe(422);
    const done = await h.complete(user, file.id);
    expect(done.body).toMatchObject({ status: "rejected", rejection: { code: "mime_mismatch" } });
    expect((await h.call("POST", "/v1/files", user, valid({ size_bytes: content.length }))).status).toBe(201);
  });

  /** Verified uploads of the user, written directly: what 200 real 50 MiB uploads would leave. */
  async function seedUsage(userId: string, bytes: number): Promise<void> {
    let left = bytes;
    while (left > 0) {
      const size = Math.min(left, MAX);
      const id = crypto.randomUUID();
      const now = h.clock.now();
      await h.db.file.create({
        data: {
          id,
          userId,
          organizationId: crypto.randomUUID(),
          purpose: "upload",
          filename: "seed.pdf",
          mimeType: "application/pdf",
          sizeBytes: BigInt(size),
          sha256: sha256(Buffer.from(id)),
          status: "verified",
          objectKey: `uploads/${id}`,
          createdAt: now,
          uploadExpiresAt: now,
          expiresAt: new Date(now.getTime() + 86_400_000),
        },
      });
      left -= size;
    }
  }

  async function usedBytes(userId: string): Promise<number> {
    const rows = await h.db.file.findMany({
      where: { userId, purpose: "upload", status: { in: ["awaiting_upload", "uploading", "uploaded", "verifying", "verified"] } },
    });
    return rows.reduce((sum, r) => sum + Number(r.sizeBytes), 0);
  }
});
