import { gzipSync } from "node:zlib";
import request from "supertest";
import { createLogger, createServiceApp, jsonBody, Metrics } from "../src";

/** A service's JSON door, as every service mounts it, echoing what it read. */
const app = createServiceApp({ logger: createLogger("t", "silent"), metrics: new Metrics("t"), readiness: [] }, (a) => {
  a.post("/op", ...jsonBody({ limit: "1mb" }), (req, res) => {
    res.json({ read: req.body as unknown });
  });
});

// The bytes as given: superagent would otherwise serialise a Buffer sent as JSON into an object.
const post = (contentType: string, body: Buffer, headers: Record<string, string> = {}) =>
  request(app)
    .post("/op")
    .set({ "content-type": contentType, ...headers })
    .serialize((b: Buffer) => b as unknown as string)
    .send(body);

describe("a JSON body's charset", () => {
  // The same rule as the gateway's: what it checked is what the service reads, byte for byte.
  it.each([
    ["utf-16", Buffer.from('{"name":"x"}', "utf16le")],
    ["UTF-16LE", Buffer.from('{"name":"x"}', "utf16le")],
    // Valid UTF-8 JSON that a UTF-7 reader would decode into another string.
    ["utf-7", Buffer.from('{"name":"+AGEAYgBj-"}', "utf8")],
    ['"utf-7"', Buffer.from('{"name":"+AGEAYgBj-"}', "utf8")],
    ["iso-8859-1", Buffer.from('{"name":"x"}', "latin1")],
  ])("other than UTF-8 (%s) is 415 unsupported_media_type", async (charset, body) => {
    const res = await post(`application/json; charset=${charset}`, body);
    expect({ status: res.status, code: (res.body as { error?: { code: string } }).error?.code }).toEqual({ status: 415, code: "unsupported_media_type" });
  });

  it.each(["application/json", "application/json; charset=utf-8", 'application/json;charset="UTF-8"', "application/merge-patch+json; charset=utf-8"])(
    "UTF-8, declared or not (%s), is read",
    async (contentType) => {
      const res = await post(contentType, Buffer.from('{"name":"+AGEAYgBj- é"}', "utf8"));
      expect({ status: res.status, body: res.body as unknown }).toEqual({ status: 200, body: { read: { name: "+AGEAYgBj- é" } } });
    },
  );
});

it("a compressed JSON body is 415 unsupported_media_type, as at the gateway", async () => {
  const res = await post("application/json", gzipSync(Buffer.from('{"name":"x"}')), { "content-encoding": "gzip" });
  expect({ status: res.status, code: (res.body as { error?: { code: string } }).error?.code }).toEqual({ status: 415, code: "unsupported_media_type" });
});
