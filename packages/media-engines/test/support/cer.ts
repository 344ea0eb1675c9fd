import { distance } from "fastest-levenshtein";

/** Whitespace runs become one space, typographic quotes and dashes their ASCII forms: layout is not content. */
export function normalizeForCer(text: string): string {
  return text
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/[\u2013\u2014]/g, "-")
    .replace(/\s+/g, " ")
    .trim();
}

/** Character error rate: edit distance / length of the expected text, both normalised. */
export function characterErrorRate(recognised: string, expected: string): number {
  const a = normalizeForCer(recognised);
  const b = normalizeForCer(expected);
  return b.length === 0 ? (a.length === 0 ? 0 : 1) : distance(a, b) / b.length;
}
