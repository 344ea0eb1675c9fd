import type { NlpModels } from "./nlp-models";

/** The two languages the language-dependent tasks have models for. */
export type AnalysisLanguage = "en" | "ru";

const LETTER = /\p{L}/u;

const segmenters = new Map<string, Intl.Segmenter>();

/** Building a segmenter costs more than segmenting a page with it: one per language and granularity. */
function segmenter(language: AnalysisLanguage, granularity: "word" | "sentence"): Intl.Segmenter {
  const key = `${language}/${granularity}`;
  let found = segmenters.get(key);
  if (!found) {
    found = new Intl.Segmenter(language, { granularity });
    segmenters.set(key, found);
  }
  return found;
}

/** Words (segments with at least one letter or digit) and sentences, by the Unicode rules of Intl.Segmenter. */
export function segment(text: string, language: AnalysisLanguage): { words: string[]; sentences: string[] } {
  const words: string[] = [];
  for (const s of segmenter(language, "word").segment(text)) {
    if (s.isWordLike) words.push(s.segment);
  }
  const sentences: string[] = [];
  for (const s of segmenter(language, "sentence").segment(text)) {
    const sentence = s.segment.trim();
    if (/[\p{L}\p{N}]/u.test(sentence)) sentences.push(sentence);
  }
  return { words, sentences };
}

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

type WinkDocument = ReturnType<NlpModels["wink"]["readDoc"]>;
let lastDocument: { text: string; doc: WinkDocument } | undefined;

/** wink-nlp's parse of the text; sentiment and entities of one run share it (the parse is most of their cost). */
function winkDocument(models: NlpModels, text: string): WinkDocument {
  if (lastDocument?.text !== text) lastDocument = { text, doc: models.wink.readDoc(text) };
  return lastDocument.doc;
}

// ---- language -------------------------------------------------------------------------------------------

export interface LanguageResult {
  /** ISO 639-1 code, `und` when nothing could be detected (too little text). */
  language: string;
  reliable: boolean;
  /** The best candidates and their scores, best first (at most 3). */
  candidates: { language: string; score: number }[];
}

export function detectLanguage(models: NlpModels, text: string): LanguageResult {
  const result = models.eld.detect(text);
  const candidates = Object.entries(result.getScores())
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([language, score]) => ({ language, score: round(score, 4) }));
  return { language: result.language || "und", reliable: result.language !== "" && result.isReliable(), candidates };
}

// ---- sentiment ------------------------------------------------------------------------------------------

export interface SentimentResult {
  label: "positive" | "negative" | "neutral";
  /** -1 (negative) to 1 (positive). */
  score: number;
  method: string;
}

const labelOf = (score: number): SentimentResult["label"] => (score > 0.05 ? "positive" : score < -0.05 ? "negative" : "neutral");

export async function sentiment(models: NlpModels, text: string, language: AnalysisLanguage): Promise<SentimentResult> {
  if (language === "en") {
    const score = winkDocument(models, text).out(models.wink.its.sentiment) as number;
    return { label: labelOf(score), score: round(score, 4), method: "wink-nlp (English lexicon)" };
  }
  const { sentiment: result } = await models.russianSentiment.process({ locale: "ru", text });
  // AFINN scores words -5..5; scale the mean over the sentiment-bearing words into -1..1.
  const score = result.numHits > 0 ? Math.max(-1, Math.min(1, result.score / result.numHits / 5)) : 0;
  return { label: labelOf(score), score: round(score, 4), method: "AFINN-ru (@nlpjs/lang-ru)" };
}

// ---- entities -------------------------------------------------------------------------------------------

export interface Entity {
  type: string;
  text: string;
  count: number;
}

const RU_MONTHS = "января|февраля|марта|апреля|мая|июня|июля|августа|сентября|октября|ноября|декабря";
/** Patterns for Russian text (wink-nlp's entity recogniser is English-only); ordered: first match wins. */
const RU_PATTERNS: [string, RegExp][] = [
  ["EMAIL", /[\w.+-]+@[\w-]+(?:\.[\w-]+)+/gu],
  ["URL", /https?:\/\/[^\s<>"«»]+|www\.[^\s<>"«»]+/gu],
  ["HASHTAG", /(?<![\p{L}\p{N}])#[\p{L}\p{N}_]+/gu],
  ["MENTION", /(?<![\p{L}\p{N}])@[\p{L}\p{N}_]+/gu],
  ["DATE", new RegExp(String.raw`\b\d{1,2}\.\d{1,2}\.\d{2,4}\b|(?<![\p{L}\p{N}])\d{1,2} (?:${RU_MONTHS})(?: \d{4}(?: (?:года|г\.))?)?`, "gu")],
  ["MONEY", /(?<![\p{L}\p{N}])\d[\d  ]*(?:[.,]\d+)? ?(?:рублей|рубля|рубль|руб\.?|₽|долларов|доллара|доллар|евро|\$|€)(?![\p{L}])/gu],
  ["PERCENT", /(?<![\p{L}\p{N}])\d+(?:[.,]\d+)? ?%/gu],
  ["PHONE", /(?:\+7|8)[\s(-]*\d{3}[\s)-]*\d{3}[\s-]*\d{2}[\s-]*\d{2}/gu],
];

function countEntities(found: { type: string; text: string }[]): Entity[] {
  const byKey = new Map<string, Entity>();
  for (const { type, text } of found) {
    const key = `${type}\u0000${text}`;
    const entity = byKey.get(key);
    if (entity) entity.count++;
    else byKey.set(key, { type, text, count: 1 });
  }
  return [...byKey.values()];
}

/**
 * Capitalised words that do not start a sentence, joined when adjacent: names of people, places and
 * companies, for a language without a tagger here. `taken` are spans already claimed by other entities.
 */
function capitalisedNames(text: string, language: AnalysisLanguage): { type: string; text: string }[] {
  const names: { type: string; text: string }[] = [];
  for (const s of segmenter(language, "sentence").segment(text)) {
    let run: string[] = [];
    let first = true;
    const flush = () => {
      if (run.length > 0) names.push({ type: "PROPER_NOUN", text: run.join(" ") });
      run = [];
    };
    for (const w of segmenter(language, "word").segment(s.segment)) {
      if (!w.isWordLike) {
        if (w.segment.trim() !== "") flush();
        continue;
      }
      if (!first && /^\p{Lu}\p{Ll}/u.test(w.segment)) run.push(w.segment);
      else flush();
      first = false;
    }
    flush();
  }
  return names;
}

export function entities(models: NlpModels, text: string, language: AnalysisLanguage): Entity[] {
  if (language === "en") {
    const { its } = models.wink;
    const doc = winkDocument(models, text);
    const found = (doc.entities().out(its.detail) as { value: string; type: string }[]).map((e) => ({ type: e.type, text: e.value }));
    // Proper nouns from the POS tagger, adjacent ones joined ("New York"), unless part of an entity above.
    const inEntity = new Set<number>();
    for (const [start, end] of doc.entities().out(its.span) as unknown as [number, number][]) {
      for (let i = start; i <= end; i++) inEntity.add(i);
    }
    // The tagger calls many capitalised sentence openers PROPN ("Contact us"): a lone one is left out.
    const sentenceStarts = new Set((doc.sentences().out(its.span) as unknown as [number, number][]).map(([start]) => start));
    let run: string[] = [];
    let runStart = 0;
    const flush = () => {
      if (run.length > 1 || (run.length === 1 && !sentenceStarts.has(runStart))) found.push({ type: "PROPER_NOUN", text: run.join(" ") });
      run = [];
    };
    doc.tokens().each((token, index) => {
      const pos = token.out(its.pos) as string;
      const value = token.out() as string;
      if (pos === "PROPN" && !inEntity.has(index) && /^\p{Lu}/u.test(value)) {
        if (run.length === 0) runStart = index;
        run.push(value);
      } else flush();
    });
    flush();
    return countEntities(found);
  }
  const found: { type: string; text: string }[] = [];
  let rest = text;
  for (const [type, pattern] of RU_PATTERNS) {
    rest = rest.replace(pattern, (match) => {
      found.push({ type, text: match.trim() });
      return " ".repeat(match.length);
    });
  }
  return countEntities([...found, ...capitalisedNames(rest, language)]);
}

// ---- keywords (RAKE) ------------------------------------------------------------------------------------

export interface Keyword {
  phrase: string;
  score: number;
  count: number;
}

const MAX_PHRASE_WORDS = 4;

/**
 * RAKE (Rose et al., 2010): candidate phrases are the runs of words between stop words and punctuation;
 * a word scores degree/frequency over the candidates, a phrase the sum of its words. Numbers alone are
 * not keywords. Ties are broken by occurrences, then alphabetically, so the output is deterministic.
 */
export function keywords(models: NlpModels, text: string, language: AnalysisLanguage, max: number): Keyword[] {
  const stop = models.stopwords[language];
  const phrases: string[][] = [];
  const fragments = text
    .toLowerCase()
    .replace(/ё/g, "е")
    // Addresses are entities, not topics: they would otherwise turn into "sales meter example".
    .replace(/https?:\/\/\S+|www\.\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+/gu, ".")
    .split(/[.,!?;:()[\]{}"«»“”„\n\r\t—–]+|\s-\s/u);
  for (const fragment of fragments) {
    let run: string[] = [];
    const flush = () => {
      if (run.length > 0 && run.length <= MAX_PHRASE_WORDS) phrases.push(run);
      run = [];
    };
    for (const w of segmenter(language, "word").segment(fragment)) {
      if (!w.isWordLike) continue;
      const word = w.segment;
      if (stop.has(word) || !LETTER.test(word) || word.length < 2) flush();
      else run.push(word);
    }
    flush();
  }
  const frequency = new Map<string, number>();
  const degree = new Map<string, number>();
  for (const phrase of phrases) {
    for (const word of phrase) {
      frequency.set(word, (frequency.get(word) ?? 0) + 1);
      degree.set(word, (degree.get(word) ?? 0) + phrase.length);
    }
  }
  const byPhrase = new Map<string, Keyword>();
  for (const phrase of phrases) {
    const key = phrase.join(" ");
    const existing = byPhrase.get(key);
    if (existing) {
      existing.count++;
      continue;
    }
    const score = phrase.reduce((sum, word) => sum + degree.get(word)! / frequency.get(word)!, 0);
    byPhrase.set(key, { phrase: key, score: round(score), count: 1 });
  }
  return [...byPhrase.values()].sort((a, b) => b.score - a.score || b.count - a.count || a.phrase.localeCompare(b.phrase)).slice(0, max);
}

// ---- readability ----------------------------------------------------------------------------------------

export interface ReadabilityResult {
  formula: string;
  flesch_reading_ease: number;
  /** School grade (US for English; the Russian adaptation for Russian). */
  grade_level: number;
  interpretation: string;
  sentences: number;
  words: number;
  syllables: number;
}

const RU_VOWELS = /[аеёиоуыэюя]/giu;

function interpretation(score: number): string {
  if (score >= 90) return "very easy";
  if (score >= 80) return "easy";
  if (score >= 70) return "fairly easy";
  if (score >= 60) return "standard";
  if (score >= 50) return "fairly difficult";
  if (score >= 30) return "difficult";
  return "very difficult";
}

/**
 * English: Flesch reading ease (206.835 - 1.015 ASL - 84.6 ASW) and Flesch-Kincaid grade
 * (0.39 ASL + 11.8 ASW - 15.59). Russian: Oborneva's coefficients for the reading ease
 * (206.835 - 1.3 ASL - 60.1 ASW) and the matching grade adaptation (0.5 ASL + 8.4 ASW - 15.59).
 * ASL = words per sentence, ASW = syllables per word; Russian syllables are counted as vowels.
 */
export function readability(models: NlpModels, text: string, language: AnalysisLanguage): ReadabilityResult | null {
  const { words, sentences } = segment(text, language);
  const lettered = words.filter((w) => LETTER.test(w));
  if (lettered.length === 0 || sentences.length === 0) return null;
  const syllables = lettered.reduce((sum, word) => sum + (language === "en" ? models.syllable(word) : (word.match(RU_VOWELS)?.length ?? 0)), 0);
  const asl = lettered.length / sentences.length;
  const asw = syllables / lettered.length;
  const ease = language === "en" ? 206.835 - 1.015 * asl - 84.6 * asw : 206.835 - 1.3 * asl - 60.1 * asw;
  const grade = language === "en" ? 0.39 * asl + 11.8 * asw - 15.59 : 0.5 * asl + 8.4 * asw - 15.59;
  return {
    formula: language === "en" ? "Flesch reading ease, Flesch-Kincaid grade" : "Flesch reading ease (Oborneva), Flesch-Kincaid grade (Russian)",
    flesch_reading_ease: round(ease),
    grade_level: round(grade),
    interpretation: interpretation(ease),
    sentences: sentences.length,
    words: lettered.length,
    syllables,
  };
}

// ---- statistics -----------------------------------------------------------------------------------------

export interface TextStatistics {
  /** Unicode code points: the unit text analysis is billed in. */
  characters: number;
  characters_excluding_spaces: number;
  letters: number;
  digits: number;
  words: number;
  unique_words: number;
  sentences: number;
  paragraphs: number;
  lines: number;
  average_word_length: number;
  average_sentence_length_words: number;
  /** At 200 words per minute. */
  reading_time_seconds: number;
}

export function statistics(text: string, language: AnalysisLanguage): TextStatistics {
  const { words, sentences } = segment(text, language);
  const letters = text.match(/\p{L}/gu)?.length ?? 0;
  return {
    characters: [...text].length,
    characters_excluding_spaces: [...text.replace(/\s/gu, "")].length,
    letters,
    digits: text.match(/\p{Nd}/gu)?.length ?? 0,
    words: words.length,
    unique_words: new Set(words.map((w) => w.toLowerCase())).size,
    sentences: sentences.length,
    paragraphs: text.split(/\n\s*\n/u).filter((p) => p.trim() !== "").length,
    lines: text === "" ? 0 : text.split(/\r\n|\r|\n/u).length,
    average_word_length: words.length > 0 ? round(words.reduce((sum, w) => sum + [...w].length, 0) / words.length) : 0,
    average_sentence_length_words: sentences.length > 0 ? round(words.length / sentences.length) : 0,
    reading_time_seconds: Math.round((words.length / 200) * 60),
  };
}
