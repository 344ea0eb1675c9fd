/**
 * Underlines and table rules, taken off the page before Tesseract reads it. Tesseract finds long lines
 * itself, but an underline that touches the descenders of small text makes the whole line one
 * component it drops as a graphic (a 96 DPI render of a paper lost its underlined licence line this
 * way). A pixel goes when it lies in a horizontal run of ink longer than `minLength` and the ink through
 * it vertically is at most `maxThickness` tall: a descender crossing the underline keeps its stroke.
 */

const INK_BELOW = 128;
/**
 * On a page scaled to 20 px lines (text-size.ts): 3 lines' height is longer than any letter's stroke,
 * and 5 px is an underline's or rule's thickness after scaling and anti-aliasing, under a stroke's
 * height with its descender. Measured on renders of a real paper page at 96, 150 and 300 DPI: 5.4 % to
 * 1.9 % character errors at 96 and 150 DPI, 1.2 % to 1.4 % at 300.
 */
export const RULE_MIN_LENGTH_PX = 60;
export const RULE_MAX_THICKNESS_PX = 5;

/** Whitens, in place, the pixels of long thin horizontal rules on an 8-bit grey page; returns how many. */
export function removeRules(grey: Buffer, width: number, height: number, minLength = RULE_MIN_LENGTH_PX, maxThickness = RULE_MAX_THICKNESS_PX): number {
  const erase: number[] = [];
  for (let y = 0; y < height; y++) {
    const row = y * width;
    let x = 0;
    while (x < width) {
      if (grey[row + x]! >= INK_BELOW) {
        x++;
        continue;
      }
      const start = x;
      while (x < width && grey[row + x]! < INK_BELOW) x++;
      if (x - start < minLength) continue;
      for (let xi = start; xi < x; xi++) {
        let top = y;
        while (top > 0 && y - top <= maxThickness && grey[(top - 1) * width + xi]! < INK_BELOW) top--;
        let bottom = y;
        while (bottom < height - 1 && bottom - top < maxThickness && grey[(bottom + 1) * width + xi]! < INK_BELOW) bottom++;
        if (bottom - top + 1 <= maxThickness) erase.push(row + xi);
      }
    }
  }
  for (const i of erase) grey[i] = 255;
  return erase.length;
}
