/**
 * The engines part of `pnpm bench:media`: the local media models run in-process, as a media-jobs worker
 * runs them, on generated inputs (no fixtures needed, deterministic content):
 * - OCR: A4 pages at 300 DPI (2480x3508, 12 pt DejaVu Sans, 40 full lines, ~2600 characters: a dense
 *   typed page), English and Russian, clean and with 5 % salt-and-pepper noise, as PNG files; several pages
 *   per job, so the Tesseract pool (one process per core) is kept busy: pages/s is sustained throughput.
 *   CER against the rendered text. One more row with 20-line pages (a letter) shows the density effect.
 * - Text-layer PDF: a 60-page PDF with a text layer (pdf-lib), read without recognition.
 * - Image edit: a 12 MP JPEG (4000x3000) resized to 1024 px wide, two jobs at a time.
 * - Image analysis: the same 12 MP JPEG; faces and objects: the 1280x1158 group photo shipped in @vladmandic/human.
 * - Text analysis: ~1000-character English and Russian texts, every task.
 * Env: BENCH_OCR_PAGES (pages per OCR row, default 6), BENCH_EDITS (default 60), BENCH_TEXTS (default 400).
 *
 * Each row gives the wall-clock rate AND the CPU time per unit (this process plus its Tesseract workers,
 * from /proc: cpuSeconds), with the capacity that CPU time allows on this machine's cores when idle
 * (cores / CPU per unit: an upper bound, perfect scaling assumed). On a shared machine (other test runs)
 * the wall-clock rate drops with the load average, printed alongside; the CPU time moves much less.
 */
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import { ensureTesseract } from "@meter/local-infra";
import { TesseractPool, createLocalEngines, parseEditPrompt, type InputFile, type LocalEngines, type OcrResultDocument } from "@meter/media-engines";
import { characterErrorRate } from "@meter/media-engines/test/support/cer";
import { a4TextPagePng, imageSize, peoplePhotoJpeg, photoJpeg, textLayerPdf, unfilteredPage } from "@meter/media-engines/test/support/generated-inputs";
import { wrap } from "@meter/media-engines/test/support/text-render";

const OCR_PAGES = Number(process.env.BENCH_OCR_PAGES ?? 6);
const EDITS = Number(process.env.BENCH_EDITS ?? 60);
const TEXTS = Number(process.env.BENCH_TEXTS ?? 400);

const ENGLISH_CORPUS =
  "The annual report describes how the company grew its customer base across three regions while keeping costs under control. " +
  "Revenue rose by fourteen percent compared with the previous year, driven mostly by subscriptions and professional services. " +
  "Our engineers shipped a new version of the billing platform in March, which reduced the time needed to close the books each month. " +
  "The board approved a budget for research and for hiring in the support team, and asked management to report on progress every quarter. " +
  "Customers told us that clear prices and quick answers matter more to them than new features, so the plan for next year puts service first. " +
  "Several risks remain: exchange rates, the cost of hardware, and the time it takes to hire experienced staff in a competitive market. " +
  "We thank our employees, partners and shareholders for their trust and look forward to another year of steady, careful work.";

const RUSSIAN_CORPUS =
  "В годовом отчёте описано, как компания увеличила число клиентов в трёх регионах и при этом удержала расходы под контролем. " +
  "Выручка выросла на четырнадцать процентов по сравнению с прошлым годом, прежде всего за счёт подписок и профессиональных услуг. " +
  "В марте наши инженеры выпустили новую версию платёжной платформы, и закрытие месяца в бухгалтерии стало занимать меньше времени. " +
  "Совет директоров утвердил бюджет на исследования и на расширение службы поддержки и попросил руководство отчитываться каждый квартал. " +
  "Клиенты говорят нам, что понятные цены и быстрые ответы для них важнее новых функций, поэтому в плане на следующий год сервис стоит первым. " +
  "Остаются риски: курсы валют, стоимость оборудования и время, которое нужно, чтобы найти опытных сотрудников на конкурентном рынке. " +
  "Мы благодарим сотрудников, партнёров и акционеров за доверие и рассчитываем на ещё один год спокойной и аккуратной работы.";

const LINES_PER_PAGE = 40;
const COLUMNS = 68;

export interface BenchRow {
  name: string;
  value: string;
  /** CPU time per unit and the capacity it allows on idle cores. */
  cpu: string;
  target: string;
  ok: boolean | null;
}

const CORES = os.availableParallelism();

/**
 * CPU seconds of this process and of its children: those already reaped (a `tesseract` run) from
 * /proc/self/stat, and those still running (the long-lived Tesseract workers) from their own stat.
 */
export function cpuSeconds(): number {
  // stat(5) after the command name: ppid is field 1; utime, stime, cutime, cstime are 11-14; ticks of 1/100 s.
  const fields = (pid: string | number) => readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  const self = fields("self");
  let ticks = Number(self[11]) + Number(self[12]) + Number(self[13]) + Number(self[14]);
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const child = fields(pid);
      if (Number(child[1]) === process.pid) ticks += Number(child[11]) + Number(child[12]);
    } catch {
      // gone between the listing and the read
    }
  }
  return ticks / 100;
}

interface Measured {
  rate: number;
  cpuPerUnit: number;
}

/** Runs `work` (which does `units` units) and measures wall-clock rate and CPU time per unit. */
async function measure(units: number, work: () => Promise<void>): Promise<Measured> {
  const cpu0 = cpuSeconds();
  const start = process.hrtime.bigint();
  await work();
  const wall = seconds(start);
  return { rate: units / wall, cpuPerUnit: (cpuSeconds() - cpu0) / units };
}

function cpuColumn(m: Measured, unit: string): string {
  return `${fmt(m.cpuPerUnit * 1000, 0)} ms CPU/${unit} -> ${fmt(CORES / m.cpuPerUnit, 1)} ${unit}s/s on ${CORES} idle cores`;
}

/** Lines of page `n`: the corpus repeated, starting at a different sentence on each page. */
function pageLines(corpus: string, n: number, lines = LINES_PER_PAGE): string[] {
  const sentences = corpus.split(/(?<=\.) /);
  const rotated = [...sentences.slice(n % sentences.length), ...sentences.slice(0, n % sentences.length)];
  return wrap(Array.from({ length: 4 }, () => rotated.join(" ")).join(" "), COLUMNS).slice(0, lines);
}

const loadAverage = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
const seconds = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e9;
const fmt = (n: number, digits = 2) => n.toFixed(digits);

async function ocrRow(
  engines: LocalEngines,
  label: string,
  corpus: string,
  noisy: boolean,
  language: "auto" | "en" | "ru",
  lines = LINES_PER_PAGE,
): Promise<BenchRow> {
  const expected = Array.from({ length: OCR_PAGES }, (_, i) => pageLines(corpus, i, lines));
  const files: InputFile[] = await Promise.all(
    expected.map(async (lines, i) => ({ data: await a4TextPagePng(lines, { noise: noisy ? 0.05 : 0, seed: 1000 + i }), mimeType: "image/png" })),
  );
  let document: OcrResultDocument | undefined;
  const m = await measure(OCR_PAGES, async () => {
    const result = await engines.ocr.run({ files, settings: { language } });
    document = JSON.parse(result.data.toString("utf8")) as OcrResultDocument;
  });
  let errors = 0;
  let length = 0;
  document!.pages.forEach((page, i) => {
    const reference = expected[i]!.join("\n");
    errors += characterErrorRate(page.text, reference) * reference.length;
    length += reference.length;
  });
  const cer = errors / length;
  const clean = !noisy;
  return {
    name: `OCR ${label}, ${lines} lines (~${Math.round(length / OCR_PAGES)} characters), 300 DPI A4, language ${language}`,
    value: `${fmt(m.rate)} pages/s, CER ${fmt(cer * 100, 3)} %`,
    cpu: cpuColumn(m, "page"),
    target: clean ? ">= 1.0 page/s, CER <= 1 %" : ">= 1.0 page/s",
    ok: m.rate >= 1 && (!clean || cer <= 0.01),
  };
}

async function textLayerRow(engines: LocalEngines): Promise<BenchRow> {
  const pages = 60;
  const data = await textLayerPdf(
    Array.from({ length: pages }, (_, p) => pageLines(ENGLISH_CORPUS, p)),
    10,
  );
  const file = { data, mimeType: "application/pdf" };
  await engines.ocr.run({ files: [file], settings: {} });
  const rounds = 3;
  const m = await measure(pages * rounds, async () => {
    for (let i = 0; i < rounds; i++) {
      await engines.ocr.measure({ files: [file], settings: {} });
      const result = await engines.ocr.run({ files: [file], settings: {} });
      if ((JSON.parse(result.data.toString("utf8")) as OcrResultDocument).ocr_page_count !== 0) throw new Error("text-layer pages were OCRed");
    }
  });
  return {
    name: `Text-layer PDF (${pages} pages; measure + run)`,
    value: `${fmt(m.rate, 1)} pages/s`,
    cpu: cpuColumn(m, "page"),
    target: ">= 50 pages/s",
    ok: m.rate >= 50,
  };
}

async function concurrently(total: number, parallel: number, work: () => Promise<unknown>): Promise<Measured> {
  let next = 0;
  return measure(total, async () => {
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (next++ < total) await work();
      }),
    );
  });
}

async function editRow(engines: LocalEngines, photo: InputFile): Promise<BenchRow> {
  const plan = parseEditPrompt("resize to width 1024");
  const result = await engines.imageEdit.run({ file: photo, plan });
  const size = await imageSize(result.data);
  if (size.width !== 1024) throw new Error(`edit produced ${size.width} px`);
  const m = await concurrently(EDITS, CORES, () => engines.imageEdit.run({ file: photo, plan }));
  return {
    name: `Image edit, 12 MP JPEG -> 1024 px wide JPEG (${CORES} at a time)`,
    value: `${fmt(m.rate, 1)} edits/s`,
    cpu: cpuColumn(m, "edit"),
    target: ">= 20/s",
    ok: m.rate >= 20,
  };
}

async function analysisRow(engines: LocalEngines, photo: InputFile): Promise<BenchRow> {
  const m = await concurrently(Math.max(10, Math.round(EDITS / 2)), CORES, () => engines.imageAnalysis.run({ files: [photo], settings: {} }));
  return { name: `Image analysis, 12 MP JPEG (${CORES} at a time)`, value: `${fmt(m.rate, 1)} images/s`, cpu: cpuColumn(m, "image"), target: "-", ok: null };
}

async function detectionRow(engines: LocalEngines): Promise<BenchRow> {
  const photo = { data: await peoplePhotoJpeg(), mimeType: "image/jpeg" };
  const m = await concurrently(10, 1, () => engines.imageDetection.run({ files: [photo], settings: {} }));
  return {
    name: "Faces and objects (meter-local-image-detection), 1280x1158 JPEG, one at a time",
    value: `${fmt(m.rate, 1)} images/s`,
    cpu: cpuColumn(m, "image"),
    target: "~1 s per image",
    ok: m.rate >= 1,
  };
}

async function textRow(engines: LocalEngines): Promise<BenchRow> {
  const texts = [ENGLISH_CORPUS.slice(0, 1000), RUSSIAN_CORPUS.slice(0, 1000)];
  const m = await measure(TEXTS, async () => {
    for (let i = 0; i < TEXTS; i++) await engines.textAnalysis.run({ input: texts[i % 2]!, settings: {} });
  });
  return {
    name: "Text analysis, 1000 characters, all six tasks (EN/RU alternating, one at a time)",
    value: `${fmt(m.rate, 0)} texts/s`,
    cpu: cpuColumn(m, "text"),
    target: ">= 200/s",
    ok: m.rate >= 200,
  };
}

/** The noisy page recognised without the median filter, to show what the filter is for. */
async function unfilteredRow(): Promise<BenchRow> {
  const lines = pageLines(ENGLISH_CORPUS, 0);
  const png = await a4TextPagePng(lines, { noise: 0.05, seed: 1000 });
  const pool = new TesseractPool({ size: 1 });
  const result = await pool.recognize(await unfilteredPage(png), { languages: "eng+rus", dpi: 300 }).finally(() => pool.close());
  return {
    name: "(reference) the first noisy English page WITHOUT the median filter",
    value: `CER ${fmt(characterErrorRate(result.text, lines.join("\n")) * 100, 3)} %`,
    cpu: "",
    target: "-",
    ok: null,
  };
}

export async function runEngineBenchmarks(log: (line: string) => void = console.error): Promise<BenchRow[]> {
  const tesseract = await ensureTesseract({ log });
  log(`${CORES} cores, ${tesseract.version}, languages ${tesseract.languages.join(" ")}, load average ${loadAverage()}`);
  const engines = createLocalEngines();
  try {
    const warm = process.hrtime.bigint();
    await engines.warmUp();
    log(`engines warmed up in ${fmt(seconds(warm) * 1000, 0)} ms`);
    const rows: BenchRow[] = [];
    const step = async (row: Promise<BenchRow>) => {
      const r = await row;
      log(`${r.name}: ${r.value} ${r.cpu}`);
      rows.push(r);
    };
    await step(ocrRow(engines, "clean English", ENGLISH_CORPUS, false, "auto"));
    await step(ocrRow(engines, "clean English", ENGLISH_CORPUS, false, "en"));
    await step(ocrRow(engines, "clean Russian", RUSSIAN_CORPUS, false, "auto"));
    await step(ocrRow(engines, "clean Russian", RUSSIAN_CORPUS, false, "ru"));
    await step(ocrRow(engines, "noisy English", ENGLISH_CORPUS, true, "auto"));
    await step(ocrRow(engines, "noisy Russian", RUSSIAN_CORPUS, true, "auto"));
    await step(ocrRow(engines, "clean English letter", ENGLISH_CORPUS, false, "auto", 20));
    await step(unfilteredRow());
    await step(textLayerRow(engines));
    const photo = { data: await photoJpeg(), mimeType: "image/jpeg" };
    await step(editRow(engines, photo));
    await step(analysisRow(engines, photo));
    await step(detectionRow(engines));
    await step(textRow(engines));
    log(`load average at the end: ${loadAverage()}`);
    return rows;
  } finally {
    await engines.close();
  }
}

export function printBenchTable(rows: BenchRow[]): void {
  console.log(`\n| engine benchmark | measured (wall clock) | CPU time | target | |`);
  console.log("|---|---|---|---|---|");
  for (const r of rows) console.log(`| ${r.name} | ${r.value} | ${r.cpu} | ${r.target} | ${r.ok === null ? "" : r.ok ? "ok" : "below target"} |`);
  console.log(`\nload average now: ${loadAverage()} (${CORES} cores)\n`);
}
