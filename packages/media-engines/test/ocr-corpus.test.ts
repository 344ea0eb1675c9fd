/** @jest-environment ./packages/media-engines/test/support/native-esm.environment.mjs */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { ensureTesseract } from "@meter/local-infra";
import { createLocalOcrEngine } from "../src/ocr/ocr.engine";
import { TesseractPool } from "../src/ocr/tesseract-pool";
import type { OcrResultDocument, OcrSettings } from "../src/provider";
import { characterErrorRate } from "./support/cer";
import { loadOcrCorpus, type CorpusDocument } from "./support/ocr-corpus";
import { plainTesseract } from "./support/plain-tesseract";

// The contract's accuracy bound, on every page of bench/media/ocr-corpus (real Tesseract, nothing
// mocked): the engine is never more than 1 point of CER worse than plain Tesseract with the right
// language on the same page, with that language and with `auto` (the default).
const BOUND = 0.01;

const pool = new TesseractPool({ size: 2 });
const engine = createLocalOcrEngine({ limits: { maxFiles: 1, maxPagesPerDocument: 10 }, pool });
let corpus: CorpusDocument[];
let dir: string;

beforeAll(async () => {
  await ensureTesseract();
  await engine.warmUp();
  corpus = await loadOcrCorpus();
  dir = await mkdtemp(path.join(os.tmpdir(), "ocr-corpus-test-"));
}, 600_000);

afterAll(async () => {
  await engine.close();
  await rm(dir, { recursive: true, force: true });
});

async function read(doc: CorpusDocument, language: NonNullable<OcrSettings["language"]>): Promise<string> {
  const result = await engine.run({ files: [{ data: doc.data, mimeType: doc.mimeType }], settings: { language } });
  return (JSON.parse(result.data.toString("utf8")) as OcrResultDocument).pages.map((p) => p.text).join("\n");
}

const pct = (cer: number) => `${(cer * 100).toFixed(2)} %`;

test("no page of the OCR corpus reads more than 1 CER point worse than plain Tesseract, with its language or auto", async () => {
  const worse: string[] = [];
  for (const [i, doc] of corpus.entries()) {
    const [plain, own, auto] = await Promise.all([plainTesseract(doc, dir, String(i)), read(doc, doc.language), read(doc, "auto")]);
    const plainCer = characterErrorRate(plain, doc.expected);
    for (const [setting, text] of [
      [doc.language, own],
      ["auto", auto],
    ] as const) {
      const cer = characterErrorRate(text, doc.expected);
      if (cer > plainCer + BOUND) worse.push(`${doc.name} (${setting}): ${pct(cer)} against ${pct(plainCer)}`);
    }
  }
  expect(corpus.length).toBeGreaterThanOrEqual(23);
  expect(worse).toEqual([]);
}, 1_800_000);
