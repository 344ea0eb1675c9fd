import { removeRules } from "./rules";

function page(width: number, height: number): Buffer {
  return Buffer.alloc(width * height, 255);
}

function ink(grey: Buffer, width: number, x0: number, y0: number, w: number, h: number): void {
  for (let y = y0; y < y0 + h; y++) grey.fill(0, y * width + x0, y * width + x0 + w);
}

test("a long thin underline is whitened; a descender crossing it and short strokes are kept", () => {
  const width = 200;
  const grey = page(width, 40);
  ink(grey, width, 10, 30, 150, 2); // the underline
  ink(grey, width, 50, 10, 3, 24); // a descender through it
  ink(grey, width, 100, 10, 30, 3); // a letter's bar: too short to be a rule
  expect(removeRules(grey, width, 40)).toBeGreaterThan(0);
  expect(grey[30 * width + 20]).toBe(255);
  expect(grey[31 * width + 150]).toBe(255);
  expect(grey[30 * width + 51]).toBe(0);
  expect(grey[11 * width + 110]).toBe(0);
});

test("a thick bar (a block of ink, not a rule) is kept", () => {
  const width = 200;
  const grey = page(width, 40);
  ink(grey, width, 10, 10, 150, 12);
  expect(removeRules(grey, width, 40)).toBe(0);
});
