import { startFakeUpstream } from "@meter/testing";

/**
 * The fake upstream in a process of its own, so the benchmark's load generator and the system under
 * test do not share its event loop. Prints its base URL and pid as one JSON line, then serves until
 * killed. The fake records every call for tests; here the record is emptied every second, so a run of
 * hundreds of thousands of requests does not grow the process (and its garbage collection) as it goes.
 */
void startFakeUpstream().then((fake) => {
  process.stdout.write(`${JSON.stringify({ anthropicBaseUrl: fake.anthropicBaseUrl, pid: process.pid })}\n`);
  setInterval(() => fake.reset(), 1000).unref();
  const stop = () => void fake.close().then(() => process.exit(0));
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
});
