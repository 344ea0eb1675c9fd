export interface Recognition {
  /** Lines joined with `\n`, paragraphs and blocks separated by an empty line (as Tesseract's txt output). */
  text: string;
  /** Mean confidence (0-100) of the recognised words, two decimals; null when no word was found. */
  confidence: number | null;
  words: number;
  /** Tesseract's text blocks in reading order, each with its box on the page and its own text. */
  blocks: RecognisedBlock[];
}

export interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
}

export interface RecognisedBlock extends Box {
  /** As Recognition.text, for this block alone. */
  text: string;
  confidenceSum: number;
  words: number;
  /**
   * The boxes of the block's lines that hold words: where the layout analysis found text. A block's own
   * box can take in a picture that a column of text wraps round; its lines never do.
   */
  lines: Box[];
}

/**
 * Tesseract's TSV output: a header, then one row per layout element with the columns
 * level, page_num, block_num, par_num, line_num, word_num, left, top, width, height, conf, text.
 * Level 2 rows are blocks (their box), level 4 rows are lines (their box), level 5 rows are words
 * (conf >= 0); the numbering of the others gives the line and paragraph breaks.
 */
export function parseTesseractTsv(tsv: string): Recognition {
  const blocks: RecognisedBlock[] = [];
  const boxes = new Map<string, Box>();
  const lineBoxes = new Map<string, Box>();
  let block: { key: string; paragraphs: string[][]; lines: string[]; line: string[]; confidenceSum: number; words: number; lineBoxes: Box[] } | undefined;
  let currentParagraph = "";
  let currentLine = "";

  const flushLine = () => {
    if (block && block.line.length > 0) block.lines.push(block.line.join(" "));
    if (block) block.line = [];
  };
  const flushParagraph = () => {
    flushLine();
    if (block && block.lines.length > 0) block.paragraphs.push(block.lines);
    if (block) block.lines = [];
  };
  const flushBlock = () => {
    flushParagraph();
    if (!block || block.words === 0) return;
    const box = boxes.get(block.key) ?? { left: 0, top: 0, width: 0, height: 0 };
    blocks.push({
      ...box,
      text: block.paragraphs.map((p) => p.join("\n")).join("\n\n"),
      confidenceSum: block.confidenceSum,
      words: block.words,
      lines: block.lineBoxes,
    });
  };

  for (const row of tsv.split("\n")) {
    const cols = row.split("\t");
    if (cols.length < 12) continue;
    const [level, , blockNum, par, ln, , left, top, width, height, conf, ...rest] = cols;
    const box = { left: Number(left), top: Number(top), width: Number(width), height: Number(height) };
    if (level === "2") boxes.set(blockNum!, box);
    if (level === "4") lineBoxes.set(`${blockNum}/${par}/${ln}`, box);
    if (level !== "5") continue;
    const text = rest.join("\t").trim();
    const confidence = Number(conf);
    if (text === "" || !(confidence >= 0)) continue;
    const paragraphKey = `${blockNum}/${par}`;
    const lineKey = `${paragraphKey}/${ln}`;
    if (block?.key !== blockNum) {
      flushBlock();
      block = { key: blockNum!, paragraphs: [], lines: [], line: [], confidenceSum: 0, words: 0, lineBoxes: [] };
    } else if (paragraphKey !== currentParagraph) {
      flushParagraph();
    } else if (lineKey !== currentLine) {
      flushLine();
    }
    const current = block!;
    if (lineKey !== currentLine) {
      const lineBox = lineBoxes.get(lineKey);
      if (lineBox) current.lineBoxes.push(lineBox);
    }
    currentParagraph = paragraphKey;
    currentLine = lineKey;
    current.line.push(text);
    current.confidenceSum += confidence;
    current.words++;
  }
  flushBlock();
  return combineBlocks(blocks);
}

/** The page's recognition from its blocks (in reading order): texts separated by an empty line. */
export function combineBlocks(blocks: RecognisedBlock[]): Recognition {
  const words = blocks.reduce((n, b) => n + b.words, 0);
  const confidenceSum = blocks.reduce((n, b) => n + b.confidenceSum, 0);
  return {
    text: blocks.map((b) => b.text).join("\n\n"),
    confidence: words > 0 ? Math.round((confidenceSum / words) * 100) / 100 : null,
    words,
    blocks,
  };
}
