import { parseTesseractTsv } from "./tsv";

const header = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext";
const row = (level: number, block: number, par: number, line: number, word: number, conf: number, text = "") =>
  [level, 1, block, par, line, word, 0, 0, 10, 10, conf, text].join("\t");

test("words become lines, paragraphs and blocks become blank-line separated, confidence is the word mean", () => {
  const tsv = [
    header,
    row(1, 0, 0, 0, 0, -1),
    row(2, 1, 0, 0, 0, -1),
    row(5, 1, 1, 1, 1, 90, "Hello"),
    row(5, 1, 1, 1, 2, 80, "world"),
    row(4, 1, 1, 2, 0, -1),
    row(5, 1, 1, 2, 1, 70, "second"),
    row(5, 2, 1, 1, 1, 60, "Block"),
    row(5, 2, 1, 1, 2, 95, " "),
  ].join("\n");
  expect(parseTesseractTsv(tsv)).toMatchObject({ text: "Hello world\nsecond\n\nBlock", confidence: 75, words: 4 });
  expect(parseTesseractTsv(tsv).blocks.map((b) => b.text)).toEqual(["Hello world\nsecond", "Block"]);
});

test("no words: empty text and no confidence", () => {
  expect(parseTesseractTsv(`${header}\n${row(1, 0, 0, 0, 0, -1)}\n`)).toEqual({ text: "", confidence: null, words: 0, blocks: [] });
});

test("a block's lines are the boxes of its lines that hold words, not its own box round a picture", () => {
  const boxed = (level: number, block: number, line: number, word: number, box: [number, number, number, number], conf: number, text = "") =>
    [level, 1, block, 1, line, word, ...box, conf, text].join("\t");
  const tsv = [
    header,
    boxed(2, 1, 0, 0, [100, 100, 900, 600], -1),
    boxed(4, 1, 1, 0, [100, 100, 300, 30], -1),
    boxed(5, 1, 1, 1, [100, 100, 120, 30], 91, "that"),
    boxed(5, 1, 1, 2, [240, 100, 160, 30], 90, "historians"),
    boxed(4, 1, 2, 0, [100, 140, 280, 30], -1),
    boxed(5, 1, 2, 1, [100, 140, 280, 30], 88, "remain"),
    boxed(4, 1, 3, 0, [420, 100, 580, 600], -1),
    boxed(5, 1, 3, 1, [420, 100, 580, 600], 95, " "),
  ].join("\n");
  const [block] = parseTesseractTsv(tsv).blocks;
  expect(block).toMatchObject({ left: 100, top: 100, width: 900, height: 600, words: 3 });
  expect(block!.lines).toEqual([
    { left: 100, top: 100, width: 300, height: 30 },
    { left: 100, top: 140, width: 280, height: 30 },
  ]);
});
