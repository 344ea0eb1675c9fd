/**
 * Child-process entry for startObjectStore: runs s3rver and reports readiness over IPC.
 *
 * s3rver is NOT a security boundary: it does not verify request signatures (SigV4 is accepted
 * unchecked), serves anonymous requests, and ignores signed headers and checksums. It only
 * enforces the expiry of presigned URLs. Use it as a storage backend for local runs and tests;
 * never expose it beyond loopback and never test authorization against it.
 *
 * One gap is filled here: s3rver supports multipart uploads but not ListMultipartUploads
 * (GET /bucket?uploads), which the minio client calls before every multipart upload (a stream of
 * unknown length, or one larger than its part size) to look for an upload to resume. We answer
 * it with an empty list, which is always a valid answer: minio then starts a fresh upload. That is
 * why s3rver's Koa app runs inside our own HTTP server instead of through s3rver.run().
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import S3rver from "s3rver";

export interface ObjectStoreChildConfig {
  host: string;
  port: number;
  directory: string;
  buckets: string[];
  silent: boolean;
}

export type ObjectStoreChildMessage = { type: "ready"; port: number } | { type: "failed"; message: string };

function send(message: ObjectStoreChildMessage): void {
  process.send?.(message);
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? "") as ObjectStoreChildConfig;
  const server = new S3rver({
    directory: config.directory,
    silent: config.silent,
    vhostBuckets: false,
    configureBuckets: config.buckets.map((name) => ({ name, configs: [] })),
  });

  const s3rver = server.callback();
  const httpServer = http.createServer((req, res) => {
    const bucket = listMultipartUploadsBucket(req);
    if (bucket === undefined) s3rver(req, res);
    else emptyMultipartUploadList(bucket, res);
  });

  let closing = false;
  const close = () => {
    if (closing) return;
    closing = true;
    httpServer.close(() => process.exit(0));
    httpServer.closeAllConnections();
  };
  process.on("SIGINT", close);
  process.on("SIGTERM", close);
  // The IPC channel closes when the parent goes away, even when it is SIGKILLed: never outlive it.
  process.on("disconnect", close);

  try {
    await server.configureBuckets();
    await new Promise<void>((resolve, reject) => {
      httpServer.once("error", reject);
      httpServer.listen(config.port, config.host, resolve);
    });
    send({ type: "ready", port: (httpServer.address() as AddressInfo).port });
  } catch (error) {
    send({ type: "failed", message: error instanceof Error ? error.message : String(error) });
    process.exit(1);
  }
}

/** The bucket of a ListMultipartUploads request (path-style GET /bucket?uploads), else undefined. */
function listMultipartUploadsBucket(req: http.IncomingMessage): string | undefined {
  if (req.method !== "GET" || !req.url) return undefined;
  const url = new URL(req.url, "http://local");
  const bucket = /^\/([^/]+)\/?$/.exec(url.pathname)?.[1];
  return bucket !== undefined && url.searchParams.has("uploads") ? decodeURIComponent(bucket) : undefined;
}

function emptyMultipartUploadList(bucket: string, res: http.ServerResponse): void {
  const escaped = bucket.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
  res.writeHead(200, { "Content-Type": "application/xml" });
  res.end(
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
      '<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' +
      `<Bucket>${escaped}</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>` +
      "<NextKeyMarker></NextKeyMarker><NextUploadIdMarker></NextUploadIdMarker>" +
      "<MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated></ListMultipartUploadsResult>",
  );
}

void main();
