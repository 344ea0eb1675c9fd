import { addScanNoise, renderTextGrey } from "../../test/support/text-render";
import { NOISY_SPECK_SHARE, isNoisy, speckShare } from "./speckle";

const lines = ["Statement 01Aug2018 Clearing Cheque 4987 36.07 99,914.15 -", "Line of Credit 100,000.00 Rate 4.2000, i.e. a small font."];

describe("speckShare", () => {
  test("clean text, even 96 DPI-sized text (9 px), is not noisy: the median would erase its thin strokes", async () => {
    for (const fontSize of [12, 16, 50]) {
      const page = await renderTextGrey({ lines, width: fontSize * 40, fontSize });
      expect(speckShare(page.data, page.width, page.height)).toBeLessThan(NOISY_SPECK_SHARE / 2);
      expect(isNoisy(page.data, page.width, page.height)).toBe(false);
    }
  });

  test("a scan with 1-5 % salt-and-pepper noise is", async () => {
    const page = await renderTextGrey({ lines, width: 2000, fontSize: 50 });
    for (const ratio of [0.01, 0.05]) expect(isNoisy(addScanNoise(page.data, ratio, 3), page.width, page.height)).toBe(true);
  });

  test("a blank page has no ink and no specks", () => {
    expect(speckShare(Buffer.alloc(100 * 100, 255), 100, 100)).toBe(0);
  });
});
