import type { FileRecord } from "@meter/contracts";
import { startStack, type Stack } from "@meter/testing";
import { httpRequest, png, sha256, zeroPng } from "./support/files-harness";

/**
 * The whole path a client takes, through a real gateway with a real key: create -> PUT -> complete ->
 * download, with billing, files and its worker and the gateway each built by its composition root.
 */
let gateway: Stack;

beforeAll(async () => {
  // Verification waits for clamd; on a loaded machine the default 5 s wait could end in a 202.
  gateway = await startStack({ services: ["billing-ledger", "files", "gateway"], env: { COMPLETE_WAIT_MS: "20000" } });
}, 120_000);

afterAll(async () => {
  await gateway?.close();
});

it("uploads, verifies and downloads a file through the gateway", async () => {
  const { key } = await gateway.account({ scopes: ["files:write", "files:read"] });
  const auth = { authorization: `Bearer ${key}` };
  const content = png(Buffer.from("a few more bytes"));

  const createRes = await fetch(`${gateway.url}/v1/files`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ filename: "pixel.png", mime_type: "image/png", size_bytes: content.length, sha256: sha256(content) }),
  });
  expect(createRes.status).toBe(201);
  const created = (await createRes.json()) as FileRecord;
  expect(created.upload!.url.startsWith(`${gateway.url}/v1/uploads/`)).toBe(true);

  // The link is the credential: no key on the PUT, just the headers it lists.
  const put = await fetch(created.upload!.url, { method: "PUT", headers: created.upload!.headers, body: content });
  expect(put.status).toBe(200);
  expect(((await put.json()) as FileRecord).status).toBe("uploaded");

  const complete = await fetch(`${gateway.url}/v1/files/${created.id}/complete`, { method: "POST", headers: auth });
  expect(complete.status).toBe(200);
  expect(((await complete.json()) as FileRecord).status).toBe("verified");

  const download = await fetch(`${gateway.url}/v1/files/${created.id}/content`, { headers: auth });
  expect(download.status).toBe(200);
  expect(download.headers.get("content-type")).toBe("image/png");
  expect(download.headers.get("content-length")).toBe(String(content.length));
  expect(Buffer.from(await download.arrayBuffer()).equals(content)).toBe(true);

  const list = await fetch(`${gateway.url}/v1/files`, { headers: auth });
  expect(((await list.json()) as { data: FileRecord[] }).data.map((f) => f.id)).toEqual([created.id]);

  const deleted = await fetch(`${gateway.url}/v1/files/${created.id}`, { method: "DELETE", headers: auth });
  expect(await deleted.json()).toEqual({ id: created.id, object: "file", deleted: true });
});

it("refuses a tampered link and a read-only key's upload creation through the gateway", async () => {
  const { key } = await gateway.account({ scopes: ["files:read"] });
  const res = await fetch(`${gateway.url}/v1/files`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ filename: "a.png", mime_type: "image/png", size_bytes: 1, sha256: "e".repeat(64) }),
  });
  expect(res.status).toBe(403);
  const put = await fetch(`${gateway.url}/v1/uploads/not.a-valid-token-at-all-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx`, {
    method: "PUT",
    headers: { "content-type": "image/png" },
    body: Buffer.from("x"),
  });
  expect(put.status).toBe(403);
  expect(((await put.json()) as { error: { code: string } }).error.code).toBe("invalid_upload_link");
});

describe("what a client cannot get past the gateway", () => {
  async function create(key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
    const payload = Buffer.from(JSON.stringify(body));
    return httpRequest(
      `${gateway.url}/v1/files`,
      "POST",
      { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": String(payload.length), ...headers },
      payload,
    );
  }

  it("builds the upload link on the configured origin, not on the client's Host or X-Forwarded-Host", async () => {
    const { key } = await gateway.account({ scopes: ["files:write"] });
    const declared = { filename: "a.png", mime_type: "image/png", size_bytes: 10, sha256: "e".repeat(64) };
    const attempts: Record<string, string>[] = [{ "x-forwarded-host": "attacker.example", "x-forwarded-proto": "https" }, { host: "attacker.example" }];
    for (const headers of attempts) {
      const res = await create(key, declared, headers);
      expect(res.status).toBe(201);
      expect((res.json as unknown as FileRecord).upload!.url.startsWith(`${gateway.url}/v1/uploads/`)).toBe(true);
    }
  });

  it("refuses a name that hides its real extension behind a right-to-left override (400 invalid_request)", async () => {
    const { key } = await gateway.account({ scopes: ["files:write", "files:read"] });
    const res = await create(key, { filename: "photo\u202Egnp.exe", mime_type: "image/png", size_bytes: 10, sha256: "e".repeat(64) });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({
      error: { code: "invalid_request", message: "filename: must not contain control or invisible formatting characters (found U+202E)" },
    });
  });

  it("rejects a 389 KB PNG of 20000x20000 pixels as image_too_large, freeing its quota", async () => {
    const { key } = await gateway.account({ scopes: ["files:write", "files:read"] });
    const auth = { authorization: `Bearer ${key}` };
    const content = await zeroPng(20_000, 20_000);
    const created = (await create(key, { filename: "huge.png", mime_type: "image/png", size_bytes: content.length, sha256: sha256(content) }))
      .json as unknown as FileRecord;
    const put = await fetch(created.upload!.url, { method: "PUT", headers: created.upload!.headers, body: content });
    expect(put.status).toBe(200);

    const started = Date.now();
    const complete = await fetch(`${gateway.url}/v1/files/${created.id}/complete`, { method: "POST", headers: auth });
    // Status and body together, so that a failure shows the error the service gave.
    expect({ status: complete.status, body: await complete.json() }).toMatchObject({
      status: 200,
      body: { id: created.id, status: "rejected", rejection: { code: "image_too_large" } },
    });
    // Decided from the header: clamd would have spent seconds decoding 400 million pixels.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((await fetch(`${gateway.url}/v1/files/${created.id}/content`, { headers: auth })).status).toBe(409);
  }, 60_000);
});
