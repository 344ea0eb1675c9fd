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
