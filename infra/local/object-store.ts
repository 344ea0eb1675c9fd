/**
 * `tsx infra/local/object-store.ts [port] [bucket...]`: a local S3-compatible server (s3rver, no
 * signature checks: local use only) in the foreground until Ctrl-C. Env: OBJECT_STORE_HOST,
 * OBJECT_STORE_PORT, OBJECT_STORE_BUCKETS (comma-separated).
 */
import { runInForeground, startObjectStore } from "../../packages/local-infra/src";

const [portArg, ...bucketArgs] = process.argv.slice(2);
const port = Number(portArg ?? process.env.OBJECT_STORE_PORT ?? 9000);
const host = process.env.OBJECT_STORE_HOST ?? "127.0.0.1";
const buckets = bucketArgs.length > 0 ? bucketArgs : (process.env.OBJECT_STORE_BUCKETS ?? "").split(",").filter(Boolean);

void runInForeground("object-store", async () => {
  const store = await startObjectStore({ host, port, buckets, log: (line) => console.error(`[object-store] ${line}`), requestLog: true });
  console.error(
    `[object-store] endpoint ${store.endpoint}, access key ${store.accessKey}, secret ${store.secretKey}, buckets: ${buckets.join(", ") || "(none)"}`,
  );
  return store;
});
