import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { createInterface } from "node:readline";
import autocannon from "autocannon";
import { FAKE_MODEL, startSystemUnderTest } from "@meter/testing";

/**
 * `pnpm bench:text`: metered POST /v1/messages through the gateway (hold, upstream call, settlement,
 * all durable in PostgreSQL) against a fake upstream that answers at once, at concurrency 1, 16 and 64,
 * beside the same load sent straight to the fake upstream in the same run. Prints requests/s,
 * p50/p90/p99 and the latency the metered path adds, then the books check. Env: BENCH_DURATION_S
 * (default 10), BENCH_CONNECTIONS (default "1,16,64").
 */
const duration = Number(process.env.BENCH_DURATION_S ?? 10);
const levels = (process.env.BENCH_CONNECTIONS ?? "1,16,64").split(",").map(Number);

interface Figures {
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  errors: number;
  non2xx: number;
}

async function load(url: string, connections: number, seconds: number, headers: Record<string, string>, body: string): Promise<Figures> {
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    pipelining: 1,
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
    // A fresh Idempotency-Key per request: each is a new paid request, never a replay.
    requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, "idempotency-key": randomUUID() } }) }],
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

async function main(): Promise<void> {
  const upstreamProcess = spawn(path.join(__dirname, "../../node_modules/.bin/tsx"), [path.join(__dirname, "fake-upstream.process.ts")], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const upstream = await new Promise<{ anthropicBaseUrl: string }>((resolve) => {
    createInterface({ input: upstreamProcess.stdout! }).once("line", (line) => resolve(JSON.parse(line) as { anthropicBaseUrl: string }));
  });
  const sut = await startSystemUnderTest({ upstream, env: { LOG_LEVEL: "warn", DATABASE_POOL_SIZE: "20" } });
  try {
    const account = await sut.account({ credit: 1_000_000_000_000 });
    const gatewayBody = JSON.stringify({ model: FAKE_MODEL, max_tokens: 64, messages: [{ role: "user", content: "Hello, benchmark" }] });
    const upstreamBody = JSON.stringify({ model: "claude-fake", max_tokens: 64, messages: [{ role: "user", content: "Hello, benchmark" }] });
    const metered = `${sut.url}/v1/messages`;
    const direct = `${upstream.anthropicBaseUrl}/v1/messages`;
    const auth = { authorization: `Bearer ${account.key}` };

    // Warm up connection pools, the JIT and the catalog cache.
    await load(metered, 8, 3, auth, gatewayBody);
    await load(direct, 8, 1, { "x-api-key": "bench" }, upstreamBody);

    const rows: string[] = [];
    for (const c of levels) {
      const m = await load(metered, c, duration, auth, gatewayBody);
      const d = await load(direct, c, duration, { "x-api-key": "bench" }, upstreamBody);
      rows.push(
        [
          String(c).padStart(4),
          m.rps.toFixed(0).padStart(8),
          `${m.p50}/${m.p90}/${m.p99}`.padStart(14),
          String(m.errors + m.non2xx).padStart(6),
          d.rps.toFixed(0).padStart(8),
          `${d.p50}/${d.p90}/${d.p99}`.padStart(14),
          (m.p50 - d.p50).toFixed(2).padStart(10),
        ].join(" | "),
      );
      console.log(`concurrency ${c}: metered ${m.rps.toFixed(0)} req/s, direct ${d.rps.toFixed(0)} req/s`);
    }
    console.log(`\nPOST /v1/messages through the gateway, metered, vs the same load straight to the fake upstream (${duration} s each)`);
    console.log("conc | metered/s | p50/p90/p99 ms | failed |  direct/s | p50/p90/p99 ms | added p50 ms");
    for (const r of rows) console.log(r);
    const books = sut.booksCheck();
    console.log(`\n${books.output}`);
    if (!books.ok) process.exitCode = 1;
  } finally {
    await sut.close();
    upstreamProcess.kill("SIGTERM");
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
