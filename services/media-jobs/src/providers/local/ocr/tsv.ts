export interface Recognition {
  /** Lines joined with `\n`, paragraphs and blocks separated by an empty line (as Tesseract's txt output). */
  text: string;
  /** Mean confidence (0-100) of the recognised words, two decimals; null when no word was found. */
  confidence: number | null;
  words: number;
}

/**
 * Tesseract's TSV output: a header, then one row per layout element with the columns
 * level, page_num, block_num, par_num, line_num, word_num, left, top, width, height, conf, text.
 * Level 5 rows are words (conf >= 0); the numbering of the others gives the line and paragraph breaks.
 */
export function parseTesseractTsv(tsv: string): Recognition {
  const paragraphs: string[][] = [];
  let currentParagraph = "";
  let currentLine = "";
  let line: string[] = [];
  let lines: string[] = [];
  let confidenceSum = 0;
  let words = 0;

  const flushLine = () => {
    if (line.length > 0) lines.push(line.join(" "));
    line = [];
  };
  const flushParagraph = () => {
    flushLine();
    if (lines.length > 0) paragraphs.push(lines);
    lines = [];
  };

  for (const row of tsv.split("\n")) {
    const cols = row.split("\t");
    if (cols.length < 12 || cols[0] !== "5") continue;
    const [, , block, par, ln, , , , , , conf, ...rest] = cols;
    const text = rest.join("\t").trim();
    const confidence = Number(conf);
    if (text === "" || !(confidence >= 0)) continue;
    const paragraphKey = `${block}/${par}`;
    const lineKey = `${paragraphKey}/${ln}`;
    if (paragraphKey !== currentParagraph) {
      flushParagraph();
      currentParagraph = paragraphKey;
    } else if (lineKey !== currentLine) {
      flushLine();
    }
    currentLine = lineKey;
    line.push(text);
    confidenceSum += confidence;
    words++;
  }
  flushParagraph();
  return {
    text: paragraphs.map((p) => p.join("\n")).join("\n\n"),
    confidence: words > 0 ? Math.round((confidenceSum / words) * 100) / 100 : null,
    words,
  };
}
