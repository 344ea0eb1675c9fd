/**
 * How tall the lines of text on a page are, read from the ink alone, so a page can be handed to Tesseract
 * at the size its recognizer works at rather than at the size it was scanned at.
 *
 * Why: Tesseract's LSTM scales every text line it finds to the network's input height (36 px for the
 * "fast" models) before reading it, so the pixels a 300 DPI scan has beyond that buy no accuracy; they
 * only make the layout analysis (thresholding, connected components, line finding) slower, and that is
 * about a third of a dense page's time.
 *
 * The estimate looks at vertical strips of the page (narrow enough that a slight skew does not merge
 * lines): in each, a run of rows that hold ink between two rows that hold none is one line's ink. Its
 * median is about the height from the top of the ascenders to the baseline: 38-39 px for 12 pt text at
 * 300 DPI, 21-29 px for 8 pt (lines set so tight that they touch make longer runs, outliers the median
 * ignores). It answers only when many runs agree; anything else (a photo, a form, white on black) gives
 * `undefined`, and the page is read at its own size: slower, never worse.
 *
 * Measured here through this engine on generated A4 pages (12 pt and 8 pt, English and Russian; clean,
 * with 5 % speckle, blurred and saved as JPEG at quality 50-60): scaled to 20 px by that measure, pages
 * were read with 0.00-0.07 % character errors, as at full size, and a dense 12 pt page cost Tesseract
 * 30 % less CPU; at 16 px Russian rose to 0.27-0.59 %.
 */

/** Height of a line's ink (ascenders to baseline) after scaling: 20 px keeps a margin over 16 px. */
export const OCR_LINE_HEIGHT_PX = 20;
/** Never shrink a page more than this, whatever the estimate. */
export const OCR_MIN_SCALE = 0.4;

const STRIPS = 8;
/** A grey level darker than this is ink. */
const INK_BELOW = 128;
/** Runs shorter than this are rules, underlines or specks, not lines of text. */
const MIN_RUN_PX = 6;
/** How many line runs it takes to trust the estimate, and how many of them must lie near the median. */
const MIN_RUNS = 12;
const AGREEING_SHARE = 0.6;

/**
 * The median ink height in pixels of the text lines on an 8-bit grey page (row-major, one byte per
 * pixel), or undefined when the page does not look like lines of text. The page need not be filtered
 * first: speckle is single pixels, and a row counts as ink only with clearly more strokes than the
 * strip's emptiest rows (a grey paper texture). Rows with a few thin strokes only may then read as
 * blank, which makes the estimate smaller, never larger: a page is scaled down less, not more.
 */
export function estimateTextLineHeight(grey: Uint8Array, width: number, height: number): number | undefined {
  const stripWidth = Math.max(32, Math.round(width / 10));
  if (width < stripWidth * 2 || height < MIN_RUN_PX * 4) return undefined;
  const runs: number[] = [];
  const counts = new Uint16Array(height);
  for (let strip = 0; strip < STRIPS; strip++) {
    // Strips spread over the middle 80 % of the width, where the text of most layouts is.
    const x0 = Math.round(width * 0.1 + ((width * 0.8 - stripWidth) * strip) / (STRIPS - 1));
    for (let y = 0; y < height; y++) {
      const row = y * width + x0;
      let ink = 0;
      // Ink is two dark pixels side by side: a stroke, not a scanner's single-pixel speckle.
      for (let x = row; x < row + stripWidth; x++) if (grey[x]! < INK_BELOW && grey[x + 1]! < INK_BELOW) ink++;
      counts[y] = ink;
    }
    const floor = counts.slice().sort()[Math.floor(height * 0.1)]!;
    const threshold = floor * 2 + 3;
    let run = 0;
    let afterBlank = false;
    for (let y = 0; y < height; y++) {
      if (counts[y]! >= threshold) {
        run++;
        continue;
      }
      // A run that touches the top or bottom edge may be cut: only runs with a blank row on both sides count.
      if (afterBlank && run >= MIN_RUN_PX) runs.push(run);
      run = 0;
      afterBlank = true;
    }
  }
  if (runs.length < MIN_RUNS) return undefined;
  runs.sort((a, b) => a - b);
  const median = runs[runs.length >> 1]!;
  const agreeing = runs.filter((h) => h >= median * 0.7 && h <= median * 1.3).length;
  return agreeing >= runs.length * AGREEING_SHARE ? median : undefined;
}

/**
 * Lines shorter than this are enlarged to this height: a 96 DPI screenshot's 11 px lines lose
 * characters as they are. Enlarging costs Tesseract time with the square of the factor, so only up to
 * the height where the errors stopped.
 */
export const OCR_MIN_LINE_HEIGHT_PX = 16;
/** Never enlarge a page more than this: 96 DPI renders of a paper (8 px lines) read as well at 1.5x as at 2x, at half the cost. */
export const OCR_MAX_SCALE = 1.5;

/**
 * The factor a page is scaled by before OCR: down to OCR_LINE_HEIGHT_PX for large text (speed), up to
 * OCR_MIN_LINE_HEIGHT_PX for small text (accuracy), 1 in between and when the height is unknown.
 * Measured on a 96 DPI bank statement screenshot (11 px lines): 5.8 % character errors as it is,
 * 0.0-0.3 % at 1.45x and 2x; on a 96 DPI render of a paper page (8 px lines), 2.2 % at 1.5x and
 * 2.0 % at 2x against 3.4 % for plain Tesseract.
 */
export function ocrScale(lineHeight: number | undefined): number {
  if (lineHeight === undefined) return 1;
  if (lineHeight < OCR_MIN_LINE_HEIGHT_PX) return Math.min(OCR_MAX_SCALE, OCR_MIN_LINE_HEIGHT_PX / lineHeight);
  if (lineHeight <= OCR_LINE_HEIGHT_PX) return 1;
  return Math.max(OCR_MIN_SCALE, OCR_LINE_HEIGHT_PX / lineHeight);
}
