import { addScanNoise, renderTextGrey, seededRandom, wrap } from "../../test/support/text-render";
import { OCR_LINE_HEIGHT_PX, OCR_MAX_SCALE, OCR_MIN_LINE_HEIGHT_PX, OCR_MIN_SCALE, estimateTextLineHeight, ocrScale } from "./text-size";

const PROSE =
  "The board approved a budget for research and for hiring in the support team, and asked management to report on progress every quarter. " +
  "Customers told us that clear prices and quick answers matter more to them than new features, so the plan for next year puts service first.";

/** An A4 page at 300 DPI with `fontSize` px text (50 px is 12 pt), 8-bit grey. */
async function page(fontSize: number, lines = 30) {
  const text = wrap(Array.from({ length: 20 }, () => PROSE).join(" "), Math.round(3400 / fontSize)).slice(0, lines);
  return renderTextGrey({ lines: text, width: 2480, height: 3508, fontSize, lineHeight: Math.round(fontSize * 1.5), margin: 236 });
}

describe("estimateTextLineHeight", () => {
  test("reads the ink height of typed lines, ascenders to baseline, and grows with the font", async () => {
    const twelvePoint = await page(50);
    const eightPoint = await page(33);
    const large = await page(67);
    const h12 = estimateTextLineHeight(twelvePoint.data, twelvePoint.width, twelvePoint.height);
    const h8 = estimateTextLineHeight(eightPoint.data, eightPoint.width, eightPoint.height);
    const h16 = estimateTextLineHeight(large.data, large.width, large.height);
    // DejaVu Sans: ascenders reach 0.76 em above the baseline.
    expect(h12).toBeGreaterThanOrEqual(34);
    expect(h12).toBeLessThanOrEqual(44);
    expect(h8).toBeLessThan(h12!);
    expect(h16).toBeGreaterThan(h12!);
  });

  test("on a speckled scan gives at most the clean page's height, never more (a page is shrunk less, not more)", async () => {
    const clean = await page(50);
    const clearHeight = estimateTextLineHeight(clean.data, clean.width, clean.height)!;
    for (const seed of [1]) {
      const speckled = addScanNoise(clean.data, 0.05, seed);
      const height = estimateTextLineHeight(speckled, clean.width, clean.height);
      expect(height).toBeLessThanOrEqual(clearHeight);
      expect(height).toBeGreaterThanOrEqual(clearHeight * 0.8);
    }
  });

  test("answers nothing for what is not lines of text: a blank page, a photo's noise, white text on black, a few lines", async () => {
    const width = 1200;
    const height = 1600;
    expect(estimateTextLineHeight(Buffer.alloc(width * height, 255), width, height)).toBeUndefined();

    const random = seededRandom(7);
    const photo = Buffer.alloc(width * height);
    for (let i = 0; i < photo.length; i++) photo[i] = Math.floor(random() * 256);
    expect(estimateTextLineHeight(photo, width, height)).toBeUndefined();

    const text = await page(50);
    const inverted = Buffer.from(text.data.map((v) => 255 - v));
    expect(estimateTextLineHeight(inverted, text.width, text.height)).toBeUndefined();

    const short = await page(50, 1);
    expect(estimateTextLineHeight(short.data, short.width, short.height)).toBeUndefined();
  });

  test("lines set so tight that descenders touch the next line's ascenders: one line's height or nothing, never two merged", async () => {
    const text = wrap(Array.from({ length: 20 }, () => PROSE).join(" "), 68).slice(0, 60);
    const tight = await renderTextGrey({ lines: text, width: 2480, height: 3508, fontSize: 50, lineHeight: 44, margin: 236 });
    const height = estimateTextLineHeight(tight.data, tight.width, tight.height);
    expect(height ?? 0).toBeLessThanOrEqual(44);
  });
});

describe("ocrScale", () => {
  test("shrinks tall text to the reading height, enlarges small text, leaves unknown text alone, within the bounds", () => {
    expect(ocrScale(undefined)).toBe(1);
    expect(ocrScale(OCR_LINE_HEIGHT_PX)).toBe(1);
    expect(ocrScale(OCR_MIN_LINE_HEIGHT_PX)).toBe(1);
    // A 96 DPI screenshot's lines (11 px) are enlarged to the height where they stop losing characters.
    expect(ocrScale(11)).toBeCloseTo(OCR_MIN_LINE_HEIGHT_PX / 11);
    expect(ocrScale(8)).toBe(OCR_MAX_SCALE);
    expect(ocrScale(2)).toBe(OCR_MAX_SCALE);
    expect(ocrScale(40)).toBeCloseTo(OCR_LINE_HEIGHT_PX / 40);
    expect(ocrScale(500)).toBe(OCR_MIN_SCALE);
  });
});
