/**
 * `pnpm bench:media`: figures for the media jobs. The engines part (bench/media/engines.ts: the local
 * models in-process), the OCR corpus part (bench/media/ocr-corpus.ts: real documents, the service beside
 * plain Tesseract), then the job-latency part (bench/media/job-latency.ts: accepted -> running through
 * the running system). BENCH_MEDIA_PARTS (comma-separated: engines, ocr-corpus, latency; default all)
 * runs only some of them.
 */
import { printBenchTable, runEngineBenchmarks } from "./engines";
import { printLatencyTable, runJobLatencyBenchmark } from "./job-latency";
import { printCorpusTable, runOcrCorpusBenchmark } from "./ocr-corpus";

const PARTS = new Set((process.env.BENCH_MEDIA_PARTS ?? "engines,ocr-corpus,latency").split(",").map((p) => p.trim()));

async function main(): Promise<void> {
  if (PARTS.has("engines")) printBenchTable(await runEngineBenchmarks());
  if (PARTS.has("ocr-corpus")) printCorpusTable(await runOcrCorpusBenchmark());
  if (PARTS.has("latency")) printLatencyTable(await runJobLatencyBenchmark());
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
