import { rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { Client, type ClientOptions } from "minio";
import { startObjectStore, type ObjectStoreHandle } from "../src";
import { retryWhileAddressInUse } from "../src/port";
import { png, tempDir } from "./fixtures";

function clientOptions(store: ObjectStoreHandle, secretKey = store.secretKey): ClientOptions {
  return {
    endPoint: store.host,
    port: store.port,
    useSSL: false,
    pathStyle: true,
    region: store.region,
    accessKey: store.accessKey,
    secretKey,
  };
}

function client(store: ObjectStoreHandle, secretKey?: string): Client {
  return new Client(clientOptions(store, secretKey));
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe("local object store (s3rver) through the minio client", () => {
  let store: ObjectStoreHandle;
  let dataDir: string;
  const bucket = "uploads";

  beforeAll(async () => {
    dataDir = await tempDir("object-store");
    store = await startObjectStore({ port: 0, dataDir, buckets: [bucket, "scratch"] });
  });

  afterAll(async () => {
    await store?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("starts with the requested buckets", async () => {
    expect(store.startedByUs).toBe(true);
    expect(store.endpoint).toBe(`http://127.0.0.1:${store.port}`);
    const names = (await client(store).listBuckets()).map((b) => b.name).sort();
    expect(names).toEqual(["scratch", "uploads"]);
  });

  it("round-trips a streamed put of known size, stat, get and remove", async () => {
    const s3 = client(store);
    const body = png(32, 32);
    const halves = [body.subarray(0, 100), body.subarray(100)];
    await s3.putObject(bucket, "u1/photo.png", Readable.from(halves), body.length, { "Content-Type": "image/png" });

    const stat = await s3.statObject(bucket, "u1/photo.png");
    expect(stat.size).toBe(body.length);
    expect(stat.metaData["content-type"]).toBe("image/png");

    expect((await readAll(await s3.getObject(bucket, "u1/photo.png"))).equals(body)).toBe(true);

    await s3.removeObject(bucket, "u1/photo.png");
    await expect(s3.statObject(bucket, "u1/photo.png")).rejects.toMatchObject({ code: "NotFound" });
  });

  it("takes a stream of unknown length (minio's multipart path) in several parts", async () => {
    const s3 = new Client({ ...clientOptions(store), partSize: 5 * 1024 * 1024 });
    const part = Buffer.alloc(1024 * 1024, 7);
    const body = Buffer.concat([...Array.from({ length: 11 }, () => part), Buffer.from("tail")]);
    const pieces = Array.from({ length: Math.ceil(body.length / 65536) }, (_, i) => body.subarray(i * 65536, (i + 1) * 65536));
    await s3.putObject(bucket, "big.bin", Readable.from(pieces));

    expect((await s3.statObject(bucket, "big.bin")).size).toBe(body.length);
    expect((await readAll(await s3.getObject(bucket, "big.bin"))).equals(body)).toBe(true);
    await s3.removeObject(bucket, "big.bin");
  });

  it("accepts uploads to a presigned PUT URL", async () => {
    const s3 = client(store);
    const url = await s3.presignedPutObject(bucket, "u1/presigned.bin", 60);
    const body = Buffer.from("uploaded through a presigned URL");
    const response = await fetch(url, { method: "PUT", body });
    expect(response.status).toBe(200);
    expect((await s3.statObject(bucket, "u1/presigned.bin")).size).toBe(body.length);
    await s3.removeObject(bucket, "u1/presigned.bin");
  });

  it("does not check signatures: a wrong secret key still writes (s3rver is no security boundary)", async () => {
    const wrong = client(store, "not-the-secret");
    await wrong.putObject(bucket, "unsigned.txt", Buffer.from("x"));
    await client(store).removeObject(bucket, "unsigned.txt");
  });

  it("reuses a server that already answers S3, adds missing buckets, and leaves it running on stop()", async () => {
    const again = await startObjectStore({ port: store.port, dataDir, buckets: ["late"] });
    expect(again.startedByUs).toBe(false);
    await again.stop();
    expect(await client(store).bucketExists("late")).toBe(true);
  });
});

describe("object store lifecycle", () => {
  it("keeps objects in its data folder across a restart, and frees the port on stop()", async () => {
    const dataDir = await tempDir("object-store-restart");
    try {
      const first = await startObjectStore({ port: 0, dataDir, buckets: ["keep"] });
      await client(first).putObject("keep", "a.txt", Buffer.from("kept"));
      await first.stop();
      await expect(client(first).listBuckets()).rejects.toMatchObject({ code: "ECONNREFUSED" });

      const second = await retryWhileAddressInUse(() => startObjectStore({ port: first.port, dataDir, buckets: ["keep"] }));
      try {
        expect(second.startedByUs).toBe(true);
        expect((await readAll(await client(second).getObject("keep", "a.txt"))).toString()).toBe("kept");
      } finally {
        await second.stop();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it("refuses a port held by something that is not S3", async () => {
    const server = http.createServer((_req, res) => res.end("hello"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      await expect(startObjectStore({ port })).rejects.toThrow(/does not answer like S3/);
    } finally {
      server.close();
    }
  });
});
