/**
 * `pnpm bench:media`: figures for the media jobs. The engines part (bench/media/engines.ts: the local
 * models in-process), then the job-latency part (bench/media/job-latency.ts: accepted -> running through
 * the running system).
 */
import { printBenchTable, runEngineBenchmarks } from "./engines";
import { printLatencyTable, runJobLatencyBenchmark } from "./job-latency";

async function main(): Promise<void> {
  const rows = await runEngineBenchmarks();
  printBenchTable(rows);
  printLatencyTable(await runJobLatencyBenchmark());
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
