import { InvalidInputError, LimitExceededError, throwIfAborted } from "../errors";
import type { EngineResult, Quantity, RunOptions, TextAnalysisEngine, TextAnalysisRequest, TextAnalysisTask } from "../provider";
import { loadNlpModels } from "./nlp-models";
import {
  detectLanguage,
  entities,
  keywords,
  readability,
  sentiment,
  statistics,
  type AnalysisLanguage,
  type Entity,
  type Keyword,
  type LanguageResult,
  type ReadabilityResult,
  type SentimentResult,
  type TextStatistics,
} from "./text-tasks";
import { jsonResult } from "../json-result";

export const TEXT_ANALYSIS_TASKS = [
  "language",
  "sentiment",
  "entities",
  "keywords",
  "readability",
  "statistics",
] as const satisfies readonly TextAnalysisTask[];
const DEFAULT_MAX_KEYWORDS = 10;

export interface LocalTextAnalysisLimits {
  maxInputCharacters: number;
}

export interface TextAnalysisDocument {
  object: "text_analysis_result";
  tasks: TextAnalysisTask[];
  /** The language the language-dependent tasks used, and where it came from. */
  analysis_language: AnalysisLanguage;
  analysis_language_source: "settings" | "detected" | "script";
  language?: LanguageResult;
  sentiment?: SentimentResult;
  entities?: Entity[];
  keywords?: Keyword[];
  /** null when the text has no sentence to measure. */
  readability?: ReadabilityResult | null;
  statistics?: TextStatistics;
}

/** Characters as billed: Unicode code points (an emoji or a Cyrillic letter is one). */
export function billableCharacters(input: string): number {
  let n = 0;
  for (const _ of input) n++;
  return n;
}

/**
 * Text analysis in English and Russian. The language-dependent tasks (sentiment, entities, keywords,
 * readability) run in `settings.language`, else the detected language when it is English or Russian,
 * else whichever of the two alphabets dominates the text.
 */
export function createLocalTextAnalysisEngine(options: { limits: LocalTextAnalysisLimits }): TextAnalysisEngine {
  const { limits } = options;

  async function measure(request: TextAnalysisRequest): Promise<Quantity> {
    return Promise.resolve({ unit: "character", quantity: checkedLength(request.input) });
  }

  function checkedLength(input: string): number {
    if (typeof input !== "string" || input.trim() === "") throw new InvalidInputError("input is empty");
    const characters = billableCharacters(input);
    if (characters > limits.maxInputCharacters) {
      throw new LimitExceededError(
        "characters",
        limits.maxInputCharacters,
        characters,
        `input has ${characters} characters; this model takes at most ${limits.maxInputCharacters}`,
      );
    }
    return characters;
  }

  async function run(request: TextAnalysisRequest, runOptions: RunOptions = {}): Promise<EngineResult> {
    const { signal, onProgress } = runOptions;
    const { input, settings } = request;
    const characters = checkedLength(input);
    const tasks = settings.tasks && settings.tasks.length > 0 ? [...new Set(settings.tasks)] : [...TEXT_ANALYSIS_TASKS];
    const models = await loadNlpModels();

    const detected = tasks.includes("language") || !settings.language || settings.language === "auto" ? detectLanguage(models, input) : undefined;
    let analysisLanguage: AnalysisLanguage;
    let source: TextAnalysisDocument["analysis_language_source"];
    if (settings.language && settings.language !== "auto") {
      analysisLanguage = settings.language;
      source = "settings";
    } else if (detected?.language === "en" || detected?.language === "ru") {
      analysisLanguage = detected.language;
      source = "detected";
    } else {
      const cyrillic = input.match(/\p{Script=Cyrillic}/gu)?.length ?? 0;
      const latin = input.match(/\p{Script=Latin}/gu)?.length ?? 0;
      analysisLanguage = cyrillic > latin ? "ru" : "en";
      source = "script";
    }

    const document: TextAnalysisDocument = { object: "text_analysis_result", tasks, analysis_language: analysisLanguage, analysis_language_source: source };
    onProgress?.({ done: 0, total: tasks.length, unit: "task" });
    for (const [index, task] of tasks.entries()) {
      throwIfAborted(signal);
      switch (task) {
        case "language":
          document.language = detected ?? detectLanguage(models, input);
          break;
        case "sentiment":
          document.sentiment = await sentiment(models, input, analysisLanguage);
          break;
        case "entities":
          document.entities = entities(models, input, analysisLanguage);
          break;
        case "keywords":
          document.keywords = keywords(models, input, analysisLanguage, settings.max_keywords ?? DEFAULT_MAX_KEYWORDS);
          break;
        case "readability":
          document.readability = readability(models, input, analysisLanguage);
          break;
        case "statistics":
          document.statistics = statistics(input, analysisLanguage);
          break;
      }
      onProgress?.({ done: index + 1, total: tasks.length, unit: "task" });
    }
    return jsonResult("character", characters, document, "text-analysis.json");
  }

  return {
    operation: "text_analysis",
    unit: "character",
    measure,
    run,
    warmUp: async () => {
      await run({ input: "Warm-up text. Текст для прогрева.", settings: {} });
    },
    close: () => Promise.resolve(),
  };
}
