/**
 * One script per word: Tesseract's `eng+rus` reads each word with whichever model scores it higher, so a
 * Latin word of capitals can come back in Cyrillic look-alikes ("НЕ МОРЕО") and a Russian one in Latin
 * ("OOO"). The engine reads a block again with its own language when that happens (ocr.engine.ts); what
 * is left, it settles here, letter by letter, among the letters the two alphabets draw the same.
 */

export type ScriptLanguage = "eng" | "rus";

const CYRILLIC_TO_LATIN: Record<string, string> = {
  А: "A",
  В: "B",
  Е: "E",
  К: "K",
  М: "M",
  Н: "H",
  О: "O",
  Р: "P",
  С: "C",
  Т: "T",
  Х: "X",
  У: "Y",
  а: "a",
  е: "e",
  о: "o",
  р: "p",
  с: "c",
  у: "y",
  х: "x",
  к: "k",
};
const LATIN_TO_CYRILLIC: Record<string, string> = Object.fromEntries(Object.entries(CYRILLIC_TO_LATIN).map(([cyr, lat]) => [lat, cyr]));

const isCyrillic = (ch: string) => /\p{Script=Cyrillic}/u.test(ch);
const isLatin = (ch: string) => /\p{Script=Latin}/u.test(ch);

export function countScripts(text: string): { latin: number; cyrillic: number } {
  return { latin: text.match(/\p{Script=Latin}/gu)?.length ?? 0, cyrillic: text.match(/\p{Script=Cyrillic}/gu)?.length ?? 0 };
}

/** The language of the script most of the text's letters are in; undefined when it has none. */
export function dominantLanguage(text: string): ScriptLanguage | undefined {
  const { latin, cyrillic } = countScripts(text);
  if (latin === 0 && cyrillic === 0) return undefined;
  return cyrillic > latin ? "rus" : "eng";
}

/**
 * Whether reading the text again with `language` alone is worth it: some word mixes the scripts or is
 * made only of the other script's look-alikes ("ЕХ" in an English block). A foreign word with letters
 * of its own ("Sberbank" in a Russian block, "Привет" in an English one) is taken as written.
 */
export function hasLookAlikeWords(text: string, language: ScriptLanguage): boolean {
  return unifyWordScripts(text, language) !== text;
}

/**
 * Every word in one script: a word with letters of both takes the script of its letters that have no
 * look-alike (or, when all of them have one, `language`'s), and a word made only of look-alikes of the
 * other script takes `language`'s. Letters without a look-alike are kept: no guess is made about them.
 */
export function unifyWordScripts(text: string, language: ScriptLanguage): string {
  return text.replace(/\S+/g, (word) => {
    const letters = [...word];
    let latin = 0;
    let cyrillic = 0;
    for (const ch of letters) {
      if (isLatin(ch) && LATIN_TO_CYRILLIC[ch] === undefined) latin++;
      else if (isCyrillic(ch) && CYRILLIC_TO_LATIN[ch] === undefined) cyrillic++;
    }
    const target: ScriptLanguage = latin > cyrillic ? "eng" : cyrillic > latin ? "rus" : language;
    const table = target === "eng" ? CYRILLIC_TO_LATIN : LATIN_TO_CYRILLIC;
    return letters.map((ch) => table[ch] ?? ch).join("");
  });
}
