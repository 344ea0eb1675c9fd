/** @jest-environment ./packages/media-engines/test/support/native-esm.environment.mjs */
import { EngineAbortedError, InvalidInputError, LimitExceededError } from "../errors";
import type { Progress, TextAnalysisSettings } from "../provider";
import { billableCharacters, createLocalTextAnalysisEngine, type TextAnalysisDocument } from "./text-analysis.engine";

const engine = createLocalTextAnalysisEngine({ limits: { maxInputCharacters: 2_000 } });

const ENGLISH =
  "Meter Labs opened a new office in New York on March 3rd, 2025. Customers love the wonderful service and the great prices. " +
  "Write to sales@meter.example or visit https://meter.example for details.";
const RUSSIAN =
  "Компания Метр открыла новый офис в Москве 3 марта 2025 года. Клиенты в восторге от прекрасного сервиса и отличных цен. " +
  "Пишите на sales@meter.example, стоимость подписки 2500 рублей.";

async function analyse(input: string, settings: TextAnalysisSettings = {}) {
  const progress: Progress[] = [];
  const result = await engine.run({ input, settings }, { onProgress: (p) => progress.push(p) });
  return { result, progress, document: JSON.parse(result.data.toString("utf8")) as TextAnalysisDocument };
}

beforeAll(() => engine.warmUp());

describe("text analysis", () => {
  test("is billed per character (code point), measured before the run", async () => {
    await expect(engine.measure({ input: "Привет 👋", settings: {} })).resolves.toEqual({ unit: "character", quantity: 8 });
    expect(billableCharacters("Привет 👋")).toBe(8);
    const { result } = await analyse(ENGLISH, { tasks: ["statistics"] });
    expect(result).toMatchObject({ unit: "character", quantity: [...ENGLISH].length, mimeType: "application/json" });
  });

  test("language", async () => {
    const en = (await analyse(ENGLISH, { tasks: ["language"] })).document;
    expect(en.language).toMatchObject({ language: "en", reliable: true });
    expect(en.analysis_language).toBe("en");
    const ru = (await analyse(RUSSIAN, { tasks: ["language"] })).document;
    expect(ru.language).toMatchObject({ language: "ru", reliable: true });
    expect(ru.language?.candidates[0]?.language).toBe("ru");
  });

  test.each([
    ["en", "I love this wonderful product, it is excellent and makes me happy.", "positive"],
    ["en", "This is a terrible, awful experience and I hate the horrible support.", "negative"],
    ["en", "The table is in the room.", "neutral"],
    ["ru", "Я очень люблю этот прекрасный город, здесь замечательные люди.", "positive"],
    ["ru", "Это ужасный, отвратительный сервис, я разочарован.", "negative"],
    ["ru", "Стол стоит в комнате.", "neutral"],
  ] as const)("sentiment (%s): %s", async (language, text, label) => {
    const { document } = await analyse(text, { tasks: ["sentiment"] });
    expect(document.analysis_language).toBe(language);
    expect(document.sentiment?.label).toBe(label);
    expect(Math.abs(document.sentiment!.score)).toBeLessThanOrEqual(1);
  });

  test("entities in English", async () => {
    const { document } = await analyse(ENGLISH, { tasks: ["entities"] });
    expect(document.entities).toEqual(
      expect.arrayContaining([
        { type: "DATE", text: "March 3rd, 2025", count: 1 },
        { type: "EMAIL", text: "sales@meter.example", count: 1 },
        { type: "URL", text: "https://meter.example", count: 1 },
        { type: "PROPER_NOUN", text: "Meter Labs", count: 1 },
        { type: "PROPER_NOUN", text: "New York", count: 1 },
      ]),
    );
    expect(document.entities?.some((e) => e.text === "Customers")).toBe(false);
  });

  test("entities in Russian", async () => {
    const { document } = await analyse(RUSSIAN, { tasks: ["entities"] });
    expect(document.entities).toEqual(
      expect.arrayContaining([
        { type: "DATE", text: "3 марта 2025 года", count: 1 },
        { type: "EMAIL", text: "sales@meter.example", count: 1 },
        { type: "MONEY", text: "2500 рублей", count: 1 },
        { type: "PROPER_NOUN", text: "Метр", count: 1 },
        { type: "PROPER_NOUN", text: "Москве", count: 1 },
      ]),
    );
  });

  test("keywords (RAKE) without stop words, at most max_keywords", async () => {
    expect((await analyse(ENGLISH, { tasks: ["keywords"], max_keywords: 3 })).document.keywords).toHaveLength(3);
    const en = (await analyse(ENGLISH, { tasks: ["keywords"] })).document.keywords!;
    expect(en.length).toBeLessThanOrEqual(10);
    const phrases = en.map((k) => k.phrase);
    expect(phrases).toEqual(expect.arrayContaining(["wonderful service", "great prices"]));
    expect(phrases.every((p) => !/\b(the|and|in|a)\b/.test(p))).toBe(true);
    const ru = (await analyse(RUSSIAN, { tasks: ["keywords"] })).document.keywords!.map((k) => k.phrase);
    expect(ru).toEqual(expect.arrayContaining(["прекрасного сервиса", "отличных цен"]));
    expect(ru.every((p) => !/(^| )(в|и|на|от)( |$)/u.test(p))).toBe(true);
  });

  test("readability: simple text scores easier than dense text, in both languages", async () => {
    const easy = (await analyse("The cat sat on the mat. The dog ran. We had fun.", { tasks: ["readability"] })).document.readability!;
    const hard = (
      await analyse(
        "Notwithstanding considerable organizational heterogeneity, institutional administrators systematically underestimated the multidimensional implications of infrastructural modernization initiatives.",
        { tasks: ["readability"] },
      )
    ).document.readability!;
    expect(easy.formula).toMatch(/^Flesch reading ease/);
    expect(easy.flesch_reading_ease).toBeGreaterThan(90);
    expect(hard.flesch_reading_ease).toBeLessThan(10);
    expect(easy.grade_level).toBeLessThan(hard.grade_level);
    expect(easy).toMatchObject({ sentences: 3, words: 12 });

    const ruEasy = (await analyse("Мама мыла раму. Кот спал. Мы шли домой.", { tasks: ["readability"] })).document.readability!;
    const ruHard = (
      await analyse(
        "Вышеупомянутые административно-хозяйственные преобразования, осуществлявшиеся соответствующими государственными учреждениями, характеризовались исключительной непоследовательностью.",
        { tasks: ["readability"] },
      )
    ).document.readability!;
    expect(ruEasy.formula).toMatch(/Oborneva/);
    // Мама мыла раму: 2+2+2 syllables, 3 words; Кот спал: 1+1; Мы шли домой: 1+1+2.
    expect(ruEasy).toMatchObject({ sentences: 3, words: 8, syllables: 12 });
    expect(ruEasy.flesch_reading_ease).toBeGreaterThan(ruHard.flesch_reading_ease + 50);
  });

  test("statistics", async () => {
    const text = "Hello world. Second sentence here!\n\nNew paragraph, 42 words? No.";
    const { document } = await analyse(text, { tasks: ["statistics"] });
    expect(document.statistics).toMatchObject({
      characters: text.length,
      words: 10,
      sentences: 4,
      paragraphs: 2,
      lines: 3,
      digits: 2,
    });
  });

  test("only the tasks asked for, in order, with progress per task", async () => {
    const { document, progress } = await analyse(ENGLISH, { tasks: ["statistics", "language"] });
    expect(document.tasks).toEqual(["statistics", "language"]);
    expect(Object.keys(document)).not.toContain("sentiment");
    expect(progress).toEqual([0, 1, 2].map((done) => ({ done, total: 2, unit: "task" })));
  });

  test("settings.language forces the analysis language", async () => {
    const { document } = await analyse("Hello there, friend.", { tasks: ["readability"], language: "ru" });
    expect(document).toMatchObject({ analysis_language: "ru", analysis_language_source: "settings" });
  });

  test("empty, too long, aborted", async () => {
    await expect(engine.measure({ input: "  ", settings: {} })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(engine.measure({ input: "a".repeat(2_001), settings: {} })).rejects.toBeInstanceOf(LimitExceededError);
    const controller = new AbortController();
    controller.abort();
    await expect(engine.run({ input: ENGLISH, settings: {} }, { signal: controller.signal })).rejects.toBeInstanceOf(EngineAbortedError);
  });
});
