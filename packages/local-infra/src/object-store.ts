/**
 * A local S3-compatible object store (s3rver) for `npm start` and the tests.
 *
 * s3rver is NOT a security boundary: it does not verify request signatures, serves anonymous
 * requests, and ignores signed headers and checksums (it only enforces presigned-URL expiry).
 * It stands in for S3's storage, not for S3's access control: bind it to loopback only, and test
 * authorization rules in our own code, never by expecting this server to refuse a request.
 *
 * It runs in a child process (object-store.child.ts) rather than in the caller's process, so that
 * the caller's event loop and memory stay its own, stop() is a signal, and the child exits by
 * itself when the parent dies (its IPC channel closes).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdir } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { OutputTail, detachFromEventLoop, killOnParentExit, terminate } from "./child-process";
import type { ObjectStoreChildConfig, ObjectStoreChildMessage } from "./object-store.child";
import { assertPort } from "./port";
import { localStateDir } from "./repo-paths";

export interface StartObjectStoreOptions {
  /** 0: any port, which the child reports (the tests' way); otherwise a server already there is reused. */
  port?: number;
  host?: string;
  /** Where objects are kept between runs. Default `<repo>/.local/object-store/`. */
  dataDir?: string;
  /** Created at start when missing; existing ones and their objects are kept. */
  buckets?: string[];
  /** Default 30 s. */
  startTimeoutMs?: number;
  /** Progress lines. Default: dropped. */
  log?: (line: string) => void;
  /** Also pass s3rver's per-request log to `log` (noisy: one line per request). Default false. */
  requestLog?: boolean;
}

export interface ObjectStoreHandle {
  /** `http://host:port`: clients must use path-style addressing and region us-east-1. */
  endpoint: string;
  host: string;
  port: number;
  region: "us-east-1";
  /** s3rver's only account. It checks that the key exists, not the signature. */
  accessKey: string;
  secretKey: string;
  /** False when an S3 server already answered on host:port: stop() then leaves it alone. */
  startedByUs: boolean;
  stop(): Promise<void>;
}

export class LocalObjectStoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "LocalObjectStoreError";
  }
}

const DEFAULT_PORT = 9000;
const DEFAULT_HOST = "127.0.0.1";
const S3RVER_KEY = "S3RVER";

type Probe = "free" | "s3" | "other";

function request(method: string, url: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, timeout: timeoutMs }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        if (body.length < 64 * 1024) body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`${method} ${url} timed out after ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}

/** Whether host:port is free, answers like S3 (ListBuckets or an S3 error document), or is something else. */
export async function probeObjectStore(host = DEFAULT_HOST, port = DEFAULT_PORT, timeoutMs = 1_000): Promise<Probe> {
  try {
    const { body } = await request("GET", `http://${host}:${port}/`, timeoutMs);
    return /<ListAllMyBucketsResult|<Error>\s*<Code>/.test(body) ? "s3" : "other";
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ECONNREFUSED" ? "free" : "other";
  }
}

/** Unsigned PUT Bucket: s3rver accepts anonymous requests; 409 means the bucket is already there. */
async function createBuckets(endpoint: string, buckets: string[]): Promise<void> {
  for (const bucket of buckets) {
    const { status, body } = await request("PUT", `${endpoint}/${encodeURIComponent(bucket)}`, 5_000);
    if (status !== 200 && status !== 409) {
      throw new LocalObjectStoreError(`could not create bucket ${bucket} on ${endpoint} (HTTP ${status}): ${body}`);
    }
  }
}

function handle(host: string, port: number, startedByUs: boolean, stop: () => Promise<void>): ObjectStoreHandle {
  return {
    endpoint: `http://${host}:${port}`,
    host,
    port,
    region: "us-east-1",
    accessKey: S3RVER_KEY,
    secretKey: S3RVER_KEY,
    startedByUs,
    stop,
  };
}

/**
 * Returns an S3 server on host:port with `buckets` present: one that already answers S3 there
 * (reused, never stopped by us), or s3rver in a child process. The child does not keep the
 * caller's event loop alive, and is killed if the caller exits without calling stop().
 */
export async function startObjectStore(options: StartObjectStoreOptions = {}): Promise<ObjectStoreHandle> {
  const host = options.host ?? DEFAULT_HOST;
  const port = options.port ?? DEFAULT_PORT;
  const buckets = options.buckets ?? [];
  const log = options.log ?? (() => {});
  if (port !== 0) {
    assertPort(port, "startObjectStore");
    const probe = await probeObjectStore(host, port);
    if (probe === "s3") {
      log(`reusing the S3 server already answering on ${host}:${port}`);
      const reused = handle(host, port, false, async () => {});
      await createBuckets(reused.endpoint, buckets);
      return reused;
    }
    if (probe === "other") throw new LocalObjectStoreError(`${host}:${port} is in use by something that does not answer like S3`);
  }

  const directory = path.resolve(options.dataDir ?? localStateDir("object-store"));
  await mkdir(directory, { recursive: true });
  const config: ObjectStoreChildConfig = { host, port, directory, buckets, silent: !(options.log && options.requestLog) };
  const entry = path.join(__dirname, "object-store.child.ts");
  // Under tsx's tsImport a resolved path carries a `?namespace=` query that is no file name.
  const tsx = pathToFileURL(require.resolve("tsx").replace(/\?.*$/, "")).href;
  const started = Date.now();
  const child = spawn(process.execPath, ["--import", tsx, entry, JSON.stringify(config)], {
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  const output = new OutputTail(options.log);
  output.attach(child.stdout);
  output.attach(child.stderr);
  killOnParentExit(child);

  let bound: number;
  try {
    bound = await readyMessage(child, options.startTimeoutMs ?? 30_000);
  } catch (error) {
    await terminate(child);
    const detail = output.toString();
    throw new LocalObjectStoreError(`${(error as Error).message} on ${host}:${port}${detail ? `:\n${detail}` : ""}`);
  }
  log(`s3rver answering on ${host}:${bound} after ${Date.now() - started} ms (pid ${child.pid}, data in ${directory})`);
  detachFromEventLoop(child);

  let stopping: Promise<void> | undefined;
  return handle(host, bound, true, () => (stopping ??= terminate(child)));
}

/** The port the child bound, once it says it is ready. */
function readyMessage(child: ChildProcess, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: ObjectStoreChildMessage) => (message.type === "ready" ? settle(undefined, message.port) : settle(new Error(message.message)));
    const onError = (error: Error) => settle(error);
    const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
      settle(new Error(`s3rver exited (code ${code}, signal ${signal}) before it was ready`));
    const timer = setTimeout(() => settle(new Error(`s3rver did not start within ${timeoutMs} ms`)), timeoutMs);
    function settle(error?: Error, port = 0) {
      clearTimeout(timer);
      child.off("message", onMessage).off("error", onError).off("exit", onExit);
      if (error) reject(error);
      else resolve(port);
    }
    child.on("message", onMessage).once("error", onError).once("exit", onExit);
  });
}
