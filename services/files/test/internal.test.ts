import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { FilesClient } from "@meter/service-clients";
import { InternalClient, InternalHttpError } from "@meter/service-kit";
import { testAuth } from "@meter/testing";
import { png, sha256, startFiles, type FilesHarness } from "./support/files-harness";

/** The internal API media-jobs uses, through its client: input checks, input bytes, job results. */
let h: FilesHarness;
let http: InternalClient;
let client: FilesClient;

beforeAll(async () => {
  h = await startFiles({ policy: { quotaBytes: 1_000 } });
  http = new InternalClient({ baseUrl: h.url, auth: testAuth("media-jobs"), audience: "files" });
  client = new FilesClient(http);
}, 120_000);

afterAll(async () => {
  await http?.close();
  await h?.close();
});

async function codeOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "ok";
  } catch (error) {
    if (error instanceof InternalHttpError) return `${error.status} ${error.code}`;
    throw error;
  }
}

describe("input files", () => {
  it("gives a verified file of the user's, with its size and type, and its bytes", async () => {
    const owner = h.user();
    const content = png();
    const file = await h.uploaded(owner, content, "image/png");
    expect((await h.complete(owner, file.id)).body.status).toBe("verified");
    expect(await client.verifiedFile(owner.user_id, file.id)).toMatchObject({
      id: file.id,
      status: "verified",
      size_bytes: content.length,
      mime_type: "image/png",
    });
    const read = await client.readFile(owner.user_id, file.id);
    expect(read).toMatchObject({ mimeType: "image/png", sizeBytes: content.length });
    const chunks: Buffer[] = [];
    for await (const chunk of read.body) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).equals(content)).toBe(true);
  });

  it("answers 404 for another user's or a missing file, 409 for one not verified", async () => {
    const owner = h.user();
    const file = await h.uploaded(owner, png(), "image/png");
    expect(await codeOf(client.verifiedFile(owner.user_id, file.id))).toBe("409 file_not_verified");
    expect(await codeOf(client.readFile(owner.user_id, file.id))).toBe("409 file_not_verified");
    expect(await codeOf(client.verifiedFile(randomUUID(), file.id))).toBe("404 file_not_found");
    expect(await codeOf(client.verifiedFile(owner.user_id, randomUUID()))).toBe("404 file_not_found");
  });

  it("is for services only", async () => {
    const p = `/internal/v1/files/${randomUUID()}?user_id=${randomUUID()}`;
    expect((await h.call("GET", p, h.user())).status).toBe(403);
    expect((await h.call("GET", p, { kind: "anonymous" })).status).toBe(403);
  });
});

describe("job results", () => {
  it("stores a streamed result for the job's user, downloadable at once, outside the quota", async () => {
    const owner = h.user();
    await h.create(owner, { filename: "big.png", mime_type: "image/png", size_bytes: 1_000, sha256: "d".repeat(64) });
    const content = Buffer.from(JSON.stringify({ text: "hello", pages: 2 }));
    const jobId = `job_${randomUUID()}`;
    const stored = await client.storeJobResult({
      jobId,
      userId: owner.user_id,
      organizationId: owner.organization_id,
      filename: "result.json",
      contentType: "application/json; charset=utf-8",
      sizeBytes: content.length,
      body: Readable.from([content.subarray(0, 10), content.subarray(10)]),
    });
    expect(stored.created).toBe(true);
    expect(stored.file).toMatchObject({
      purpose: "job_result",
      status: "verified",
      mime_type: "application/json",
      size_bytes: content.length,
      sha256: sha256(content),
      filename: "result.json",
    });
    const res = await h.call("GET", `/v1/files/${stored.file.id}/content`, owner);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json");
    expect((await h.call("GET", "/v1/files", owner)).body.data.map((f: { id: string }) => f.id)).toContain(stored.file.id);
    expect(await client.verifiedFile(owner.user_id, stored.file.id)).toMatchObject({ id: stored.file.id });

    const again = await client.storeJobResult({
      jobId,
      userId: owner.user_id,
      organizationId: owner.organization_id,
      filename: "result.json",
      contentType: "application/json",
      sizeBytes: content.length,
      body: content,
    });
    expect(again).toEqual({ created: false, file: stored.file });
  });

  it("refuses other types, bad sizes and bad parameters", async () => {
    const owner = h.user();
    const base = { jobId: `job_${randomUUID()}`, userId: owner.user_id, organizationId: owner.organization_id, filename: "r.bin" };
    expect(await codeOf(client.storeJobResult({ ...base, contentType: "application/zip", sizeBytes: 3, body: Buffer.from("abc") }))).toBe(
      "415 unsupported_media_type",
    );
    expect(await codeOf(client.storeJobResult({ ...base, contentType: "text/plain", sizeBytes: 0, body: Buffer.alloc(0) }))).toBe("400 invalid_request");
    expect(await codeOf(client.storeJobResult({ ...base, filename: "a/b", contentType: "text/plain", sizeBytes: 1, body: Buffer.from("a") }))).toBe(
      "400 invalid_request",
    );
    expect(await codeOf(client.storeJobResult({ ...base, jobId: "bad id", contentType: "text/plain", sizeBytes: 1, body: Buffer.from("a") }))).toBe(
      "400 invalid_request",
    );
  });
});
