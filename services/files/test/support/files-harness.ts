import { createHash, randomUUID } from "node:crypto";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import http, { createServer, type Server } from "node:http";
import path from "node:path";
import type { Readable } from "node:stream";
import zlib from "node:zlib";
import request from "supertest";
import type { Express } from "express";
import { UNSIGNED_PAYLOAD, type CreateFileRequest, type Deployable, type FileRecord, type Identity, type KeyIdentity } from "@meter/contracts";
import { connectBus, type Bus } from "@meter/messaging";
import {
  clamavSignaturesDir,
  ensureClamd,
  repoRoot,
  retryWhileAddressInUse,
  startObjectStore,
  type ClamdHandle,
  type ObjectStoreHandle,
} from "@meter/local-infra";
import { closeServer, createLogger, listen } from "@meter/service-kit";
import {
  createTestDatabase,
  createTestVhost,
  signedCall,
  startServiceProcess,
  testAuth,
  testKeyEnv,
  type ServiceProcess,
  type TestDatabase,
  type TestVhost,
} from "@meter/testing";
import { S3ObjectStore } from "../../src/adapters/s3-object-store";
import { compose, type FilesServices } from "../../src/composition";
import { loadConfig } from "../../src/config";
import type { Db } from "../../src/db";
import type { Clock, FilesPolicy } from "../../src/domain/policy";
import { FileRepository } from "../../src/repositories/file.repository";
import { RetentionService } from "../../src/services/retention.service";

export const SERVICE_DIR = path.resolve(__dirname, "../..");
/** Headers of a call to the files service as its real caller would sign it: the gateway, or media-jobs for a service identity. */
export function signFor(identity: Identity, method: string, p: string, body?: unknown): { headers: Record<string, string>; payload: string | undefined } {
  return signedCall(identity.kind === "service" ? (identity.service as Deployable) : "gateway", "files", identity, method, p, body);
}

/** An upload PUT as the gateway forwards it: anonymous, its streamed body not in the signature. */
export function signUpload(p: string): Record<string, string> {
  return testAuth("gateway").sign({ kind: "anonymous" }, { audience: "files", method: "PUT", path: p, body: UNSIGNED_PAYLOAD });
}
export const UPLOAD_SECRET = "test-upload-secret-0123456789-0123456789";
export const BUCKET = "meter-files-test";

/** Real time plus an offset the test moves forward: expiry without waiting. */
export class TestClock implements Clock {
  private offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
  reset(): void {
    this.offsetMs = 0;
  }
}

export interface HttpResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  json: Record<string, unknown>;
}

export interface FilesHarness {
  app: Express;
  /** The app on a real port, for streamed bodies. */
  url: string;
  db: Db;
  repository: FileRepository;
  services: FilesServices;
  policy: FilesPolicy;
  clock: TestClock;
  store: ObjectStoreHandle;
  objects: S3ObjectStore;
  /** clamd on its own port, stopped and started again by the test. */
  clamd: { start(): Promise<void>; stop(): Promise<void> };
  bus: Bus;
  vhost: TestVhost;
  retention: RetentionService;
  /** A fresh key holder (own user and organization). */
  user(): KeyIdentity;
  /** A supertest call signed with the identity. */
  call(method: "GET" | "POST" | "PUT" | "DELETE", p: string, identity: Identity, body?: unknown): request.Test;
  create(identity: KeyIdentity, body: CreateFileRequest): Promise<FileRecord>;
  /** PUTs to an upload link as the gateway would forward it (anonymous identity), with any headers and body. */
  put(url: string, headers: Record<string, string>, body: Buffer | Readable): Promise<HttpResult>;
  /** create -> PUT with the given headers -> 200. */
  uploaded(identity: KeyIdentity, content: Buffer, mimeType: string, declared?: Partial<CreateFileRequest>): Promise<FileRecord>;
  complete(identity: KeyIdentity, id: string): Promise<{ status: number; body: FileRecord }>;
  /** The verification worker (src/worker.ts) as its own process, as `npm start` runs it. */
  startWorker(): Promise<void>;
  stopWorker(): Promise<void>;
  /** The running worker's health server. */
  workerUrl(): string;
  /**
   * Another files API process (src/main.ts) on the same database, store and secrets, which the test
   * can SIGKILL mid-request; stopped by close() if the test does not. `env` overrides its settings.
   */
  startApiProcess(env?: Record<string, string>): Promise<ServiceProcess>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  policy?: Partial<FilesPolicy>;
  /** Start the worker process (default true). */
  worker?: boolean;
  /** Extra settings for the worker process. */
  workerEnv?: Record<string, string>;
}

/**
 * The files service on real PostgreSQL, RabbitMQ (own vhost), s3rver and clamd (each on a port of its own):
 * the API built with createApp(deps) in this process, the worker (src/worker.ts) as a child process,
 * and the retention sweeper run in this process when the test calls it.
 *
 * The worker runs apart because it is the process that loads `file-type`, an ESM-only package that
 * Node 20.19+ requires natively but jest's CommonJS runtime cannot resolve.
 */
export async function startFiles(opts: HarnessOptions = {}): Promise<FilesHarness> {
  const logger = createLogger("files-test", process.env.LOG_LEVEL ?? "silent");
  const [database, vhost] = await Promise.all([createTestDatabase(SERVICE_DIR), createTestVhost()]);
  const cleanups: (() => Promise<void>)[] = [() => vhost.drop(), () => database.drop()];
  const cleanup = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  };
  try {
    const dataDir = await mkdtemp(path.join(tmpdir(), "meter-files-test-"));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const clamdDir = path.join(dataDir, "clamd");
    const clamd = {
      handle: undefined as ClamdHandle | undefined,
      port: 0,
      // First on a port of its own; after a stop on the same one again, which the worker was told.
      async start() {
        const port = this.port;
        this.handle = await (port === 0 ? ensureClamd({ port, dataDir: clamdDir }) : retryWhileAddressInUse(() => ensureClamd({ port, dataDir: clamdDir })));
        this.port = this.handle.port;
      },
      async stop() {
        await this.handle?.stop();
        this.handle = undefined;
      },
    };
    const [store] = await Promise.all([startObjectStore({ port: 0, buckets: [BUCKET], dataDir: path.join(dataDir, "store") }), clamd.start()]);
    cleanups.push(
      () => store.stop(),
      () => clamd.stop(),
    );
    return await assemble({ logger, database, vhost, store, clamd, clamdPort: clamd.port, opts, cleanups, cleanup });
  } catch (error) {
    await cleanup();
    throw error;
  }
}

async function assemble(ctx: {
  logger: ReturnType<typeof createLogger>;
  database: TestDatabase;
  vhost: TestVhost;
  store: ObjectStoreHandle;
  clamd: { start(): Promise<void>; stop(): Promise<void> };
  clamdPort: number;
  opts: HarnessOptions;
  cleanups: (() => Promise<void>)[];
  cleanup: () => Promise<void>;
}): Promise<FilesHarness> {
  const { logger, database, vhost, store, opts, cleanups } = ctx;
  const clock = new TestClock();
  // The test's own bus stands in for billing-ledger, which owns the bus topology (files only waits for it).
  const bus = await connectBus({ url: vhost.url, name: "files-test", topology: "declare", logger, keys: testAuth("files").keys });
  cleanups.push(() => bus.close());
  const composition = await compose(
    loadConfig({
      ...testKeyEnv("files"),
      FILES_DATABASE_URL: database.url,
      RABBITMQ_URL: vhost.url,
      OBJECT_STORE_ENDPOINT: store.endpoint,
      OBJECT_STORE_ACCESS_KEY: store.accessKey,
      OBJECT_STORE_SECRET_KEY: store.secretKey,
      OBJECT_STORE_REGION: store.region,
      FILES_BUCKET: BUCKET,
      FILES_UPLOAD_SECRET: UPLOAD_SECRET,
      DATABASE_POOL_SIZE: "20",
      // The API process only asks clamd what it scans with (its readiness reports it).
      CLAMD_PORT: String(ctx.clamdPort),
    }),
    // Long enough for the worker's scan on a loaded machine (a decided file returns at once); tests of
    // the window itself set their own.
    { logger, clock, policy: { completeWaitMs: 15_000, completePollMs: 50, ...opts.policy }, relayIdleMs: 50 },
  );
  cleanups.push(() => composition.close());
  const { app, services, policy } = composition;
  const db = composition.database.prisma;
  const objects = new S3ObjectStore({
    endpoint: store.endpoint,
    accessKey: store.accessKey,
    secretKey: store.secretKey,
    region: store.region,
    bucket: BUCKET,
  });
  const repository = new FileRepository(db);
  const server: Server = createServer(app);
  const port = await listen(server, 0, "127.0.0.1");
  cleanups.push(() => {
    server.closeAllConnections();
    return closeServer(server);
  });
  const url = `http://127.0.0.1:${port}`;

  let worker: ServiceProcess | undefined;
  const workerEnv: Record<string, string> = {
    ...testKeyEnv("files-worker"),
    FILES_DATABASE_URL: database.url,
    RABBITMQ_URL: vhost.url,
    OBJECT_STORE_ENDPOINT: store.endpoint,
    OBJECT_STORE_ACCESS_KEY: store.accessKey,
    OBJECT_STORE_SECRET_KEY: store.secretKey,
    FILES_BUCKET: BUCKET,
    CLAMD_HOST: "127.0.0.1",
    CLAMD_PORT: String(ctx.clamdPort),
    CLAMD_TIMEOUT_MS: "10000",
    VERIFY_RETRY_MAX_ATTEMPTS: "100",
    VERIFY_RETRY_BACKOFF_MS: "200,500",
    DATABASE_POOL_SIZE: "4",
    ...opts.workerEnv,
  };
  const startWorker = async () => {
    worker ??= await startServiceProcess(path.join(SERVICE_DIR, "src", "worker.ts"), repoRoot(), { FILES_WORKER_PORT: "0", ...workerEnv });
  };
  const stopWorker = async () => {
    await worker?.stop();
    worker = undefined;
  };
  if (opts.worker !== false) await startWorker();
  cleanups.push(stopWorker);
  const startApiProcess = async (env: Record<string, string> = {}) => {
    const api = await startServiceProcess(path.join(SERVICE_DIR, "src", "main.ts"), repoRoot(), {
      ...workerEnv,
      ...testKeyEnv("files"),
      FILES_PORT: "0",
      FILES_UPLOAD_SECRET: UPLOAD_SECRET,
      UPLOAD_LEASE_MS: String(policy.uploadLeaseMs),
      UPLOAD_IDLE_TIMEOUT_MS: String(policy.uploadIdleTimeoutMs),
      ...env,
    });
    cleanups.push(() => api.stop());
    return api;
  };
  // Sweeps on the test's command; what it hands to the outbox the API's relay publishes within its 50 ms idle.
  const retention = new RetentionService({ files: repository, store: objects, policy, clock, logger, kickOutbox: () => {} });

  const call = (method: "GET" | "POST" | "PUT" | "DELETE", p: string, identity: Identity, body?: unknown) => {
    const agent = request(app);
    const t = method === "GET" ? agent.get(p) : method === "POST" ? agent.post(p) : method === "PUT" ? agent.put(p) : agent.delete(p);
    const { headers, payload } = signFor(identity, method, p, body);
    t.set(headers);
    return payload === undefined ? t : t.send(payload);
  };
  const put = (uploadUrl: string, headers: Record<string, string>, body: Buffer | Readable) => {
    const p = new URL(uploadUrl).pathname;
    return httpRequest(`${url}${p}`, "PUT", { ...headers, ...signUpload(p) }, body);
  };
  const create = async (identity: KeyIdentity, body: CreateFileRequest) => {
    const res = await call("POST", "/v1/files", identity, body);
    if (res.status !== 201) throw new Error(`create -> ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as FileRecord;
  };

  return {
    app,
    url,
    db,
    repository,
    services,
    policy,
    clock,
    store,
    objects,
    clamd: ctx.clamd,
    bus,
    vhost,
    retention,
    user: () => ({
      kind: "key",
      key_id: randomUUID(),
      user_id: randomUUID(),
      organization_id: randomUUID(),
      scopes: ["files:write", "files:read"],
    }),
    call,
    create,
    put,
    async uploaded(identity, content, mimeType, declared = {}) {
      const file = await create(identity, {
        filename: "upload.bin",
        mime_type: mimeType as CreateFileRequest["mime_type"],
        size_bytes: content.length,
        sha256: sha256(content),
        ...declared,
      });
      const res = await put(file.upload!.url, file.upload!.headers, content);
      if (res.status !== 200) throw new Error(`upload -> ${res.status} ${res.body.toString()}`);
      return res.json as unknown as FileRecord;
    },
    async complete(identity, id) {
      const res = await call("POST", `/v1/files/${id}/complete`, identity);
      return { status: res.status, body: res.body as FileRecord };
    },
    startWorker,
    stopWorker,
    workerUrl() {
      if (!worker) throw new Error("the worker is not running");
      return worker.url;
    },
    startApiProcess,
    close: ctx.cleanup,
  };
}

/** Buffers as the body of an ObjectStore.put. */
export async function* chunks(...buffers: Buffer[]): AsyncGenerator<Buffer> {
  for (const buffer of buffers) yield buffer;
}

export function sha256(content: Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}

/** A real (1x1, RGBA) PNG: signature, IHDR, IDAT, IEND. */
export function png(extra: Buffer = Buffer.alloc(0)): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type, "ascii"), data])));
    return Buffer.concat([length, Buffer.from(type, "ascii"), data, crc]);
  };
  const ihdr = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0]);
  const idat = Buffer.from("789c63f8cfc0f01f0005000201a5f6e3f1", "hex");
  return Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), chunk("IHDR", ihdr), chunk("IDAT", idat), chunk("IEND", Buffer.alloc(0)), extra]);
}

/**
 * A width x height 8-bit greyscale PNG, every pixel 0: 389 KB at 20000x20000, 400 MB once decoded. The
 * rows are deflated as a stream, so making it never holds the decoded image either.
 */
export async function zeroPng(width: number, height: number): Promise<Buffer> {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 0, 0, 0, 0], 8);
  const deflate = zlib.createDeflate({ level: 9 });
  const compressed: Buffer[] = [];
  deflate.on("data", (c: Buffer) => compressed.push(c));
  const row = Buffer.alloc(1 + width);
  for (let y = 0; y < height; y++) if (!deflate.write(row)) await once(deflate, "drain");
  deflate.end();
  await once(deflate, "end");
  return Buffer.concat([
    Buffer.from("89504e470d0a1a0a", "hex"),
    pngChunk("IHDR", header),
    pngChunk("IDAT", Buffer.concat(compressed)),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(Buffer.concat([Buffer.from(type, "ascii"), data])));
  return Buffer.concat([length, Buffer.from(type, "ascii"), data, crc]);
}

/** A small but well-formed PDF. */
export function pdf(): Buffer {
  return Buffer.from(
    "%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n",
  );
}

/** The EICAR test string, decoded from the project's signature file so no source file holds it. */
export function eicar(): Buffer {
  const line = readFileSync(path.join(clamavSignaturesDir(), "meter-test.ndb"), "utf8").trim();
  return Buffer.from(line.split(":").at(-1) ?? "", "hex");
}

function crc32(data: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of data) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

export function httpRequest(url: string, method: string, headers: Record<string, string>, body?: Buffer | Readable, signal?: AbortSignal): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, ...(signal ? { signal } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const buffer = Buffer.concat(chunks);
        let json: Record<string, unknown> = {};
        try {
          json = JSON.parse(buffer.toString("utf8")) as Record<string, unknown>;
        } catch {
          // not JSON: the caller reads `body`
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: buffer, json });
      });
      res.on("error", reject);
    });
    // A server that answers early and closes may reset the rest of a body still being written.
    req.on("error", reject);
    if (body === undefined) req.end();
    else if (Buffer.isBuffer(body)) req.end(body);
    else {
      // Headers go out now, not with the first chunk: a test may hold the body back.
      req.flushHeaders();
      body.pipe(req);
    }
  });
}
