import { randomBytes } from "node:crypto";
import { PassThrough } from "node:stream";
import type { FileRecord } from "@meter/contracts";
import { httpRequest, png, sha256, signFor, signUpload, startFiles, type FilesHarness } from "./support/files-harness";

/** The upload link: what it refuses before reading a byte, and what it does with the bytes. */
let h: FilesHarness;

beforeAll(async () => {
  h = await startFiles({ policy: { maxFileBytes: 20 * 1024 * 1024 } });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

async function created(
  content: Buffer,
  mimeType: "image/png" | "application/pdf" = "image/png",
): Promise<{ file: FileRecord; url: string; headers: Record<string, string> }> {
  const file = await h.create(h.user(), { filename: "x.png", mime_type: mimeType, size_bytes: content.length, sha256: sha256(content) });
  return { file, url: file.upload!.url, headers: file.upload!.headers };
}

async function objectOf(id: string): Promise<{ size: number } | undefined> {
  const row = await h.repository.find(id);
  return h.objects.stat(row!.objectKey);
}

describe("the link", () => {
  it("stores the bytes and answers 200 with the file uploaded", async () => {
    const content = png();
    const { file, url, headers } = await created(content);
    const res = await h.put(url, headers, content);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: file.id, status: "uploaded" });
    expect(await objectOf(file.id)).toEqual({ size: content.length });
  });

  it("refuses a tampered link (403 invalid_upload_link)", async () => {
    const content = png();
    const { url, headers } = await created(content);
    const [claims, mac] = url.split("/").at(-1)!.split(".") as [string, string];
    const base = url.slice(0, url.lastIndexOf("/") + 1);
    const flipped = (s: string, i: number) => s.slice(0, i) + (s[i] === "A" ? "B" : "A") + s.slice(i + 1);
    const bigger = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(claims, "base64url").toString()), s: content.length + 1 })).toString("base64url");
    for (const token of [`${claims}.${flipped(mac, 5)}`, `${flipped(claims, 3)}.${mac}`, `${bigger}.${mac}`, claims, "x"]) {
      const res = await h.put(base + token, headers, content);
      expect([token, res.status, res.json.error]).toEqual([token, 403, expect.objectContaining({ code: "invalid_upload_link" })]);
    }
  });

  it("refuses an expired link (403 upload_link_expired)", async () => {
    const content = png();
    const { file, url, headers } = await created(content);
    h.clock.advance(300_001);
    try {
      const res = await h.put(url, headers, content);
      expect(res.status).toBe(403);
      expect(res.json.error).toMatchObject({ code: "upload_link_expired" });
      expect(await objectOf(file.id)).toBeUndefined();
    } finally {
      h.clock.advance(-300_001);
    }
  });

  it("needs the gateway's signed anonymous identity", async () => {
    const content = png();
    const { url, headers } = await created(content);
    const p = new URL(url).pathname;
    const unsigned = await httpRequest(h.url + p, "PUT", headers, content);
    expect(unsigned.status).toBe(401);
    const asKey = await httpRequest(h.url + p, "PUT", { ...headers, ...signFor(h.user(), "PUT", p).headers }, content);
    expect(asKey.status).toBe(403);
  });
});

describe("the headers", () => {
  it.each([
    ["no Content-Type", { "content-type": undefined }],
    ["another Content-Type", { "content-type": "image/jpeg" }],
    ["Content-Type with parameters", { "content-type": "image/png; charset=binary" }],
    ["no SHA-256 header", { "x-content-sha256": undefined }],
    ["another SHA-256", { "x-content-sha256": "0".repeat(64) }],
  ])("refuses %s (400 invalid_upload_headers)", async (_what, change) => {
    const content = png();
    const { file, url, headers } = await created(content);
    const sent = { ...headers, ...change } as Record<string, string | undefined>;
    for (const [k, v] of Object.entries(sent)) if (v === undefined) delete sent[k];
    const res = await h.put(url, sent as Record<string, string>, content);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: "invalid_upload_headers" });
    expect(await objectOf(file.id)).toBeUndefined();
  });

  it("refuses fewer bytes than declared (400 invalid_upload_headers)", async () => {
    const content = png();
    const { url, headers } = await created(content);
    const short = content.subarray(0, content.length - 1);
    const res = await h.put(url, { ...headers, "content-length": String(short.length) }, short);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: "invalid_upload_headers" });
  });

  it("refuses a body without Content-Length (chunked)", async () => {
    const content = png();
    const { url, headers } = await created(content);
    const body = new PassThrough();
    const sent = { ...headers };
    delete sent["content-length"];
    const pending = h.put(url, sent, body);
    body.end(content);
    const res = await pending;
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: "invalid_upload_headers" });
  });
});

describe("the bytes", () => {
  it("refuses more bytes than declared at once (413), keeps nothing, and the link still works", async () => {
    const content = png();
    const { file, url, headers } = await created(content);
    const longer = Buffer.concat([content, Buffer.from("extra")]);
    const res = await h.put(url, { ...headers, "content-length": String(longer.length) }, longer);
    expect(res.status).toBe(413);
    expect(res.json.error).toMatchObject({ code: "payload_too_large" });
    expect(await objectOf(file.id)).toBeUndefined();
    expect((await h.put(url, headers, content)).status).toBe(200);
  });

  it("refuses a second upload to a finished file (409 upload_already_completed)", async () => {
    const content = png();
    const { url, headers } = await created(content);
    expect((await h.put(url, headers, content)).status).toBe(200);
    const again = await h.put(url, headers, content);
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({ code: "upload_already_completed" });
  });

  it("refuses a second upload while one is streaming, and completion before it ends", async () => {
    const content = randomBytes(64 * 1024);
    const owner = h.user();
    const file = await h.create(owner, { filename: "x.pdf", mime_type: "application/pdf", size_bytes: content.length, sha256: sha256(content) });
    const body = new PassThrough();
    const first = h.put(file.upload!.url, file.upload!.headers, body);
    body.write(content.subarray(0, 1000));
    await waitFor(async () => (await h.repository.find(file.id))?.status === "uploading");
    const second = await h.put(file.upload!.url, file.upload!.headers, content);
    expect([second.status, second.json.error]).toEqual([409, expect.objectContaining({ code: "conflict" })]);
    const early = await h.complete(owner, file.id);
    expect(early.status).toBe(409);
    body.end(content.subarray(1000));
    expect((await first).status).toBe(200);
  });

  it("keeps nothing when the client goes away mid-upload, and the link can be used again", async () => {
    const content = randomBytes(7 * 1024 * 1024);
    const { file, url, headers } = await created(content, "application/pdf");
    const body = new PassThrough();
    const p = new URL(url).pathname;
    const client = new AbortController();
    const req = httpRequest(h.url + p, "PUT", { ...headers, ...signUpload(p) }, body, client.signal);
    body.write(content.subarray(0, 6 * 1024 * 1024));
    await waitFor(async () => (await h.repository.find(file.id))?.status === "uploading");
    client.abort();
    await expect(req).rejects.toThrow();
    await waitFor(async () => (await h.repository.find(file.id))?.status === "awaiting_upload");
    expect(await objectOf(file.id)).toBeUndefined();
    expect((await h.put(url, headers, content)).status).toBe(200);
    expect(await objectOf(file.id)).toEqual({ size: content.length });
  });

  it("streams a 12 MiB upload byte for byte", async () => {
    const content = randomBytes(12 * 1024 * 1024);
    const { file, url, headers } = await created(content, "application/pdf");
    const body = new PassThrough();
    const pending = h.put(url, headers, body);
    for (let at = 0; at < content.length; at += 256 * 1024) body.write(content.subarray(at, at + 256 * 1024));
    body.end();
    expect((await pending).status).toBe(200);
    const row = await h.repository.find(file.id);
    const chunks: Buffer[] = [];
    for await (const chunk of await h.objects.read(row!.objectKey)) chunks.push(chunk as Buffer);
    expect(sha256(Buffer.concat(chunks))).toBe(sha256(content));
  });

  it("rejects bytes whose hash is not the declared one as soon as they are in (checksum_mismatch)", async () => {
    const owner = h.user();
    const content = png();
    const file = await h.create(owner, { filename: "x.png", mime_type: "image/png", size_bytes: content.length, sha256: sha256(Buffer.from("other")) });
    const res = await h.put(file.upload!.url, file.upload!.headers, content);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ status: "rejected", rejection: { code: "checksum_mismatch" } });
    expect(await objectOf(file.id)).toBeUndefined();
    const done = await h.complete(owner, file.id);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: "rejected", rejection: { code: "checksum_mismatch" } });
  });

  it("refuses an upload to a deleted file", async () => {
    const owner = h.user();
    const content = png();
    const file = await h.create(owner, { filename: "x.png", mime_type: "image/png", size_bytes: content.length, sha256: sha256(content) });
    expect((await h.call("DELETE", `/v1/files/${file.id}`, owner)).status).toBe(200);
    const res = await h.put(file.upload!.url, file.upload!.headers, content);
    expect(res.status).toBe(403);
    expect(res.json.error).toMatchObject({ code: "invalid_upload_link" });
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 25));
  }
}
