import { readFileSync } from "node:fs";
import path from "node:path";
import type { InputFile } from "../../src/provider";

export const FIXTURES_DIR = path.join(__dirname, "..", "fixtures");

export interface FixtureExpectation {
  mime_type: string;
  language?: "en" | "ru";
  /** The text of each page, lines separated by `\n`. */
  pages?: string[];
  text_layer?: boolean;
  width?: number;
  height?: number;
  stored_width?: number;
  stored_height?: number;
  orientation?: number;
  exif?: Record<string, string>;
}

const expectations = JSON.parse(readFileSync(path.join(FIXTURES_DIR, "expected.json"), "utf8")) as Record<string, FixtureExpectation>;

export type FixtureName = "english.png" | "russian.png" | "noisy-scan.png" | "text-layer.pdf" | "scanned.pdf" | "exif.jpg";

/** A committed fixture (see test/fixtures/generate.ts) as an engine input, with what it is known to contain. */
export function fixture(name: FixtureName): { file: InputFile; expected: FixtureExpectation } {
  const expected = expectations[name];
  if (!expected) throw new Error(`no expectation for fixture ${name}`);
  return { file: { data: readFileSync(path.join(FIXTURES_DIR, name)), mimeType: expected.mime_type, filename: name }, expected };
}
