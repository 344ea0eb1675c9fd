import { startFakeUpstream } from "@meter/testing";

/**
 * The fake upstream in a process of its own, so the benchmark's load generator and the system under
 * test do not share its event loop. Prints its base URLs and pid as one JSON line, then serves until
 * killed. The fake records every call for tests; here the record is emptied every second, so a run of
 * hundreds of thousands of requests does not grow the process (and its garbage collection) as it goes.
 *
 * `--fail-every n`: every n-th call is answered 500 (2: half of them), for BENCH_PROVIDERS=failover;
 * the calls and failures are counted and printed on stderr when it stops.
 */
const failEvery = process.argv.includes("--fail-every") ? Number(process.argv[process.argv.indexOf("--fail-every") + 1]) : undefined;

void startFakeUpstream().then((fake) => {
  if (failEvery) fake.configure({ status: 500, failEvery });
  let calls = 0;
  process.stdout.write(`${JSON.stringify({ anthropicBaseUrl: fake.anthropicBaseUrl, openaiBaseUrl: fake.openaiBaseUrl, pid: process.pid })}\n`);
  setInterval(() => {
    calls += fake.calls.length;
    // Not reset(): that would also forget the failure switch.
    fake.calls.length = 0;
  }, 1000).unref();
  const stop = () => {
    calls += fake.calls.length;
    if (failEvery) process.stderr.write(`fake upstream (failing every ${failEvery}): ${calls} calls, ${Math.floor(calls / failEvery)} answered 500\n`);
    void fake.close().then(() => process.exit(0));
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
});
