import { startFakeUpstream } from "@meter/testing";

/**
 * The fake upstream in a process of its own, so the benchmark's load generator and the system under
 * test do not share its event loop. Prints its base URLs as one JSON line, then serves until killed.
 */
void startFakeUpstream().then((fake) => {
  process.stdout.write(`${JSON.stringify({ anthropicBaseUrl: fake.anthropicBaseUrl })}\n`);
  const stop = () => void fake.close().then(() => process.exit(0));
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
});
