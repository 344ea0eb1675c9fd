import sharp from "sharp";
import { seededRandom } from "./text-render";

/**
 * Pages with pictures for the OCR corpus (ocr-corpus.ts), the same on every run: text set in columns
 * that wrap round a figure (a halftoned magazine photo, a photo with its caption, a chart with its
 * labels) and a letterhead with a logo. Each returns its grey pixels and its text in reading order.
 */

export interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
}

export interface PageImage {
  /** 8-bit grey pixels, row-major; a bilevel page's are 0 or 255. */
  pixels: Buffer;
  width: number;
  height: number;
  text: string;
}

const escapeXml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** Capitals with full stops (B.C.E., A.M.) are set in small caps, as magazines set them. */
const SMALL_CAPS = /^[A-Z](\.[A-Z])*\.$/;

/** A line's text for SVG, its abbreviations (SMALL_CAPS) at the size of small capitals. */
function smallCaps(text: string, fontSize: number): string {
  return text
    .split(" ")
    .map((word) => {
      const bare = word.replace(/[,;:]$/, "");
      return SMALL_CAPS.test(bare) ? `<tspan font-size="${fontSize * 0.78}">${escapeXml(bare)}</tspan>${escapeXml(word.slice(bare.length))}` : escapeXml(word);
    })
    .join(" ");
}

interface ColumnLayout {
  page: { width: number; height: number };
  margin: number;
  /** Baseline of the first line. */
  top: number;
  columns: number;
  gutter: number;
  fontSize: number;
  /** A width per character that the font's text stays inside. */
  charWidth: number;
  /** What the lines wrap round, with `pad` px of white kept round it. */
  figure: Box;
  pad: number;
}

/**
 * Paragraphs set line by line down the columns, left to right; a line beside the figure takes the wider
 * side of it. Returns each line's baseline position and text.
 */
function flowColumns(paragraphs: readonly string[], layout: ColumnLayout): { x: number; y: number; text: string }[] {
  const { page, margin, fontSize, figure, pad } = layout;
  const column = (page.width - 2 * margin - (layout.columns - 1) * layout.gutter) / layout.columns;
  const lineHeight = Math.round(fontSize * 1.25);
  const room = (left: number, y: number): { x: number; width: number } => {
    const right = left + column;
    const overlaps = y + fontSize * 0.3 > figure.top - pad && y - fontSize < figure.top + figure.height + pad;
    if (!overlaps || figure.left - pad >= right || figure.left + figure.width + pad <= left) return { x: left, width: column };
    const before = figure.left - pad - left;
    const after = right - (figure.left + figure.width + pad);
    return before >= after ? { x: left, width: Math.max(0, before) } : { x: figure.left + figure.width + pad, width: after };
  };
  const lines: { x: number; y: number; text: string }[] = [];
  let col = 0;
  let y = layout.top;
  for (const paragraph of paragraphs) {
    const words = paragraph.split(/\s+/).filter(Boolean);
    while (words.length > 0) {
      const box = room(margin + col * (column + layout.gutter), y);
      const capacity = Math.floor(box.width / layout.charWidth);
      let line = "";
      while (words.length > 0 && (line ? line.length + 1 : 0) + words[0]!.length <= capacity) line = line ? `${line} ${words.shift()!}` : words.shift()!;
      if (line) lines.push({ x: box.x, y, text: line });
      y += lineHeight;
      if (y > page.height - margin) {
        col++;
        y = layout.top;
      }
    }
    y += Math.round(lineHeight * 0.4);
  }
  return lines;
}

const textElements = (lines: { x: number; y: number; text: string }[], fontSize: number) =>
  lines.map((l) => `<text x="${l.x}" y="${l.y}" xml:space="preserve">${smallCaps(l.text, fontSize)}</text>`).join("");

/** An SVG page (white) drawn to grey pixels, with `figure` pixels laid over it at its box. */
async function drawPage(svg: string, size: { width: number; height: number }, figure?: { box: Box; pixels: Buffer }): Promise<Buffer> {
  const page = await sharp(Buffer.from(svg)).flatten({ background: "#ffffff" }).greyscale().raw().toBuffer();
  if (figure) {
    const { box, pixels } = figure;
    for (let y = 0; y < box.height; y++) pixels.copy(page, (box.top + y) * size.width + box.left, y * box.width, (y + 1) * box.width);
  }
  return page;
}

/** Soft grey shapes, a street at night, or a footbridge over a river by day. */
export type PhotoScene = "shapes" | "night" | "bridge";

/**
 * A photo's grey pixels. The night scene is what the UNLV-ISRI magazine page 8087_054.3B has: a mostly
 * black print with small bright marks and film grain, which a 1-bit scan keeps as specks and strokes of
 * about a letter's size (the kind of picture that reads as words when taken for text). The bridge has
 * a railing of thin posts over rippled water.
 */
export async function photoGrey(scene: PhotoScene, width: number, height: number, seed: number): Promise<Buffer> {
  const random = seededRandom(seed);
  const shade = (lo: number, hi: number) => {
    const v = Math.round(lo + random() * (hi - lo));
    return `rgb(${v},${v},${v})`;
  };
  const svg = (content: string) => Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">${content}</svg>`);
  if (scene === "shapes") {
    const blobs = Array.from({ length: 6 }, () => ({ cx: random(), cy: random(), r: 0.15 + random() * 0.25, shade: Math.round(random() * 200) }));
    const picture = svg(
      `<defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#e8e8e8"/><stop offset="1" stop-color="#404040"/></linearGradient></defs>` +
        `<rect width="100%" height="100%" fill="url(#g)"/>` +
        blobs.map((b) => `<circle cx="${b.cx * width}" cy="${b.cy * height}" r="${b.r * width}" fill="rgb(${b.shade},${b.shade},${b.shade})"/>`).join(""),
    );
    return sharp(picture).blur(6).greyscale().raw().toBuffer();
  }
  let content: string;
  if (scene === "night") {
    const roofs = Array.from({ length: 7 }, (_, i) => {
      const x0 = (i / 7) * width - random() * 60;
      const x1 = ((i + 1) / 7) * width + random() * 60;
      const ridge = height * (0.15 + random() * 0.35);
      const eave = ridge + 40 + random() * 80;
      return (
        `<polygon points="${x0},${eave} ${(x0 + x1) / 2},${ridge} ${x1},${eave} ${x1},${height} ${x0},${height}" fill="${shade(15, 60)}"/>` +
        `<polyline points="${x0},${eave} ${(x0 + x1) / 2},${ridge} ${x1},${eave}" fill="none" stroke="${shade(170, 235)}" stroke-width="${2 + random() * 3}"/>`
      );
    });
    const windows = Array.from({ length: 90 }, () => {
      const w = 5 + random() * 16;
      const h = 6 + random() * 20;
      return `<rect x="${random() * width}" y="${height * (0.3 + random() * 0.7)}" width="${w}" height="${h}" fill="${shade(150, 250)}"/>`;
    });
    content = `<rect width="100%" height="100%" fill="${shade(40, 70)}"/>${roofs.join("")}${windows.join("")}`;
  } else {
    const deck = height * 0.45;
    const post = Math.max(3, width / 120);
    const posts = Array.from(
      { length: 24 },
      (_, i) => `<rect x="${(i + 0.5) * (width / 24)}" y="${deck - height * 0.12}" width="${post}" height="${height * 0.12}" fill="${shade(20, 50)}"/>`,
    );
    const ripples = Array.from({ length: 60 }, () => {
      const y = deck + height * 0.1 + random() * height * 0.45;
      const x = random() * width;
      return `<rect x="${x}" y="${y}" width="${20 + random() * 80}" height="${2 + random() * 4}" fill="${shade(170, 240)}"/>`;
    });
    const trees = Array.from(
      { length: 5 },
      () =>
        `<circle cx="${random() * width}" cy="${deck - height * (0.15 + random() * 0.1)}" r="${height * (0.06 + random() * 0.08)}" fill="${shade(60, 110)}"/>`,
    );
    content =
      `<defs><linearGradient id="sky" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#f0f0f0"/><stop offset="1" stop-color="#b0b0b0"/></linearGradient></defs>` +
      `<rect width="100%" height="100%" fill="url(#sky)"/>` +
      trees.join("") +
      `<rect y="${deck + height * 0.06}" width="100%" height="${height}" fill="${shade(90, 120)}"/>` +
      ripples.join("") +
      `<rect y="${deck - height * 0.13}" width="100%" height="${post}" fill="${shade(20, 50)}"/>` +
      posts.join("") +
      `<rect y="${deck}" width="100%" height="${height * 0.06}" fill="${shade(30, 60)}"/>`;
  }
  const grey = await sharp(svg(content)).blur(0.8).greyscale().raw().toBuffer();
  for (let i = 0; i < grey.length; i++) grey[i] = Math.max(0, Math.min(255, Math.round(grey[i]! + (random() - 0.5) * 70)));
  return grey;
}

/** Grey pixels through a 45-degree clustered-dot halftone screen (~70 lines per inch at 300 DPI), as printed photos scan in 1 bit. */
function halftone(grey: Buffer, width: number, height: number): Buffer {
  const period = 300 / 70 / Math.SQRT1_2;
  const out = Buffer.alloc(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const u = ((x + y) * Math.SQRT1_2 * 2 * Math.PI) / period;
      const v = ((x - y) * Math.SQRT1_2 * 2 * Math.PI) / period;
      out[y * width + x] = grey[y * width + x]! < 127.5 * (1 + Math.cos(u) * Math.cos(v) * 0.98) ? 0 : 255;
    }
  }
  return out;
}

const LETTER_300DPI = { width: 2550, height: 3300 };

/**
 * A magazine page as a 300 DPI bilevel scan (the UNLV-ISRI kind): a headline over two columns of 11 pt
 * DejaVu Serif that wrap round a halftoned photo (`photo`: its box in px), thresholded to 1 bit. The
 * text: the headline, then the first column, then the second.
 */
export async function magazinePage(article: string, photo: Box & { scene: PhotoScene }, seed: number): Promise<PageImage> {
  const [headline = "", ...paragraphs] = article.split("\n");
  const { width, height } = LETTER_300DPI;
  const margin = 150;
  const fontSize = (11 / 72) * 300;
  const lines = flowColumns(paragraphs, {
    page: LETTER_300DPI,
    margin,
    top: margin + 160 + fontSize,
    columns: 2,
    gutter: 75,
    fontSize,
    charWidth: fontSize * 0.6,
    figure: photo,
    pad: 40,
  });
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">` +
    `<rect width="100%" height="100%" fill="#ffffff"/>` +
    `<text x="${margin}" y="${margin + 80}" font-family="DejaVu Sans" font-weight="bold" font-size="${(24 / 72) * 300}">${escapeXml(headline)}</text>` +
    `<g font-family="DejaVu Serif" font-size="${fontSize}" fill="#000000">${textElements(lines, fontSize)}</g></svg>`;
  const pixels = halftone(await photoGrey(photo.scene, photo.width, photo.height, seed), photo.width, photo.height);
  const page = await drawPage(svg, LETTER_300DPI, { box: photo, pixels });
  for (let i = 0; i < page.length; i++) page[i] = page[i]! < 128 ? 0 : 255;
  return { pixels: page, width, height, text: [headline, ...lines.map((l) => l.text)].join("\n") };
}

const A4_INCHES = { width: 8.27, height: 11.69 };
const a4 = (dpi: number) => ({ width: Math.round(A4_INCHES.width * dpi), height: Math.round(A4_INCHES.height * dpi) });

/**
 * A newsletter page in grey at `dpi`: a headline, one column of 11 pt DejaVu Serif wrapping round a
 * photo on the right, and the photo's caption in italics under it. The text: the headline, then the
 * column with the caption where it stands (after the column's lines above it).
 */
export async function newsletterPage(article: string, caption: string, dpi: number, seed: number): Promise<PageImage> {
  const [headline = "", ...paragraphs] = article.split("\n");
  const page = a4(dpi);
  const margin = Math.round(0.8 * dpi);
  const fontSize = (11 / 72) * dpi;
  const photo = { left: Math.round(page.width * 0.5), top: Math.round(2.2 * dpi), width: Math.round(page.width * 0.5 - margin), height: Math.round(2.6 * dpi) };
  const captionSize = fontSize * 0.85;
  const captionTop = photo.top + photo.height + captionSize * 1.6;
  const captionWords = caption.split(" ");
  const captionLines: string[] = [];
  for (const word of captionWords) {
    const last = captionLines.at(-1);
    if (last !== undefined && (last.length + 1 + word.length) * captionSize * 0.55 <= photo.width) captionLines[captionLines.length - 1] = `${last} ${word}`;
    else captionLines.push(word);
  }
  const figure = { ...photo, height: Math.round(captionTop + captionLines.length * captionSize * 1.3 - photo.top) };
  const lines = flowColumns(paragraphs, {
    page,
    margin,
    top: margin + 1.0 * dpi,
    columns: 1,
    gutter: 0,
    fontSize,
    charWidth: fontSize * 0.6,
    figure,
    pad: Math.round(0.15 * dpi),
  });
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${page.width}" height="${page.height}">` +
    `<rect width="100%" height="100%" fill="#ffffff"/>` +
    `<text x="${margin}" y="${margin + 0.4 * dpi}" font-family="DejaVu Sans" font-weight="bold" font-size="${(20 / 72) * dpi}">${escapeXml(headline)}</text>` +
    `<g font-family="DejaVu Serif" font-size="${fontSize}" fill="#000000">${textElements(lines, fontSize)}</g>` +
    `<g font-family="DejaVu Serif" font-style="italic" font-size="${captionSize}" fill="#000000">` +
    captionLines.map((line, i) => `<text x="${photo.left}" y="${captionTop + i * captionSize * 1.3}">${escapeXml(line)}</text>`).join("") +
    `</g></svg>`;
  const pixels = await drawPage(svg, page, { box: photo, pixels: await photoGrey("bridge", photo.width, photo.height, seed) });
  const above = lines.filter((l) => l.y < captionTop).map((l) => l.text);
  const below = lines.filter((l) => l.y >= captionTop).map((l) => l.text);
  return { pixels, ...page, text: [headline, ...above, ...captionLines, ...below].join("\n") };
}

/** One series of a bar chart: its name and a value per category. */
interface Series {
  name: string;
  values: number[];
}

/**
 * A grouped bar chart as SVG (DejaVu Sans): a title, value ticks with grid lines, a bar per series in
 * each category, the categories' names under the axis and a legend. Returns its text as read top to
 * bottom, left to right: the title, the ticks from the top, the categories, the legend.
 */
function barChart(
  title: string,
  categories: readonly string[],
  series: readonly Series[],
  ticks: readonly number[],
  size: { width: number; height: number },
  unit: number,
) {
  const font = 9 * unit;
  const plot = { left: 5 * font, top: 2.5 * font, right: size.width - font, bottom: size.height - 5 * font };
  const [low, high] = [Math.min(...ticks), Math.max(...ticks)];
  const yOf = (v: number) => plot.bottom - ((v - low) / (high - low)) * (plot.bottom - plot.top);
  const groupWidth = (plot.right - plot.left) / categories.length;
  const barWidth = (groupWidth * 0.7) / series.length;
  const fills = ["#202020", "#808080", "#c0c0c0"];
  const parts: string[] = [`<text x="${plot.left}" y="${font * 1.2}" font-weight="bold">${escapeXml(title)}</text>`];
  for (const tick of [...ticks].sort((a, b) => b - a)) {
    parts.push(`<line x1="${plot.left}" x2="${plot.right}" y1="${yOf(tick)}" y2="${yOf(tick)}" stroke="#b0b0b0" stroke-width="${unit}"/>`);
    parts.push(`<text x="${plot.left - font * 0.5}" y="${yOf(tick) + font * 0.35}" text-anchor="end">${tick}</text>`);
  }
  categories.forEach((category, c) => {
    series.forEach((s, i) => {
      const value = s.values[c]!;
      const x = plot.left + c * groupWidth + groupWidth * 0.15 + i * barWidth;
      parts.push(
        `<rect x="${x}" y="${Math.min(yOf(value), yOf(0))}" width="${barWidth * 0.9}" height="${Math.abs(yOf(value) - yOf(0))}" fill="${fills[i % fills.length]}"/>`,
      );
    });
    parts.push(`<text x="${plot.left + (c + 0.5) * groupWidth}" y="${plot.bottom + font * 1.4}" text-anchor="middle">${escapeXml(category)}</text>`);
  });
  parts.push(`<line x1="${plot.left}" x2="${plot.left}" y1="${plot.top}" y2="${plot.bottom}" stroke="#000000" stroke-width="${unit * 1.5}"/>`);
  parts.push(`<line x1="${plot.left}" x2="${plot.right}" y1="${yOf(0)}" y2="${yOf(0)}" stroke="#000000" stroke-width="${unit * 1.5}"/>`);
  const legendY = plot.bottom + font * 3.4;
  let legendX = plot.left;
  for (const [i, s] of series.entries()) {
    parts.push(`<rect x="${legendX}" y="${legendY - font * 0.8}" width="${font}" height="${font}" fill="${fills[i % fills.length]}"/>`);
    parts.push(`<text x="${legendX + font * 1.4}" y="${legendY}">${escapeXml(s.name)}</text>`);
    legendX += font * (2.5 + s.name.length * 0.62);
  }
  const svg = `<g font-family="DejaVu Sans" font-size="${font}" fill="#000000">${parts.join("")}</g>`;
  const text = [title, ...[...ticks].sort((a, b) => b - a).map(String), categories.join(" "), series.map((s) => s.name).join(" ")];
  return { svg, text };
}

/**
 * A report page in grey at `dpi`: a headline and one column of 11 pt DejaVu Serif with a bar chart
 * across it, after the second paragraph. The text: the headline, the column with the chart's labels
 * where the chart stands.
 */
export async function reportPage(report: string, dpi: number): Promise<PageImage> {
  const [headline = "", ...paragraphs] = report.split("\n");
  const page = a4(dpi);
  const margin = Math.round(0.8 * dpi);
  const fontSize = (11 / 72) * dpi;
  const chartBox = {
    left: margin + Math.round(0.5 * dpi),
    top: Math.round(4.6 * dpi),
    width: page.width - 2 * margin - Math.round(1.0 * dpi),
    height: Math.round(3.0 * dpi),
  };
  const chart = barChart(
    "Mean daily flow, m3/s",
    ["January", "February", "March"],
    [
      { name: "Marlow Ford", values: [9.4, 11.2, -6.8] },
      { name: "Ellbrook", values: [7.1, 8.5, -3.9] },
      { name: "Sea Lock", values: [12.6, 14.0, -8.1] },
    ],
    [-10, -5, 0, 5, 10, 15],
    chartBox,
    dpi / 72,
  );
  const lines = flowColumns(paragraphs, {
    page,
    margin,
    top: margin + 1.0 * dpi,
    columns: 1,
    gutter: 0,
    fontSize,
    charWidth: fontSize * 0.6,
    figure: chartBox,
    pad: Math.round(0.15 * dpi),
  });
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${page.width}" height="${page.height}">` +
    `<rect width="100%" height="100%" fill="#ffffff"/>` +
    `<text x="${margin}" y="${margin + 0.4 * dpi}" font-family="DejaVu Sans" font-weight="bold" font-size="${(20 / 72) * dpi}">${escapeXml(headline)}</text>` +
    `<g font-family="DejaVu Serif" font-size="${fontSize}" fill="#000000">${textElements(lines, fontSize)}</g>` +
    `<g transform="translate(${chartBox.left},${chartBox.top})">${chart.svg}</g></svg>`;
  const above = lines.filter((l) => l.y < chartBox.top).map((l) => l.text);
  const below = lines.filter((l) => l.y >= chartBox.top).map((l) => l.text);
  return { pixels: await drawPage(svg, page), ...page, text: [headline, ...above, ...chart.text, ...below].join("\n") };
}

/**
 * A letter on letterhead, in grey at `dpi`: a logo (a dark disc with a white wave and three fir trees)
 * beside the sender's name in bold and its address line, a rule, then the letter in 12 pt DejaVu Sans
 * wrapped at `columns` characters. The text: the name, the address line, the letter's lines.
 */
export async function letterheadPage(sender: string, address: string, letter: readonly string[], dpi: number): Promise<PageImage> {
  const page = a4(dpi);
  const margin = Math.round(0.8 * dpi);
  const fontSize = (12 / 72) * dpi;
  const logo = Math.round(0.9 * dpi);
  const r = logo / 2;
  const tree = (cx: number) =>
    `<polygon points="${cx},${r * 0.35} ${cx - r * 0.22},${r * 0.95} ${cx + r * 0.22},${r * 0.95}" fill="#ffffff"/><rect x="${cx - r * 0.04}" y="${r * 0.95}" width="${r * 0.08}" height="${r * 0.15}" fill="#ffffff"/>`;
  const emblem =
    `<g transform="translate(${margin},${margin})">` +
    `<circle cx="${r}" cy="${r}" r="${r}" fill="#1a1a1a"/>` +
    tree(r * 0.6) +
    tree(r) +
    tree(r * 1.4) +
    `<path d="M ${r * 0.2} ${r * 1.35} q ${r * 0.2} ${-r * 0.2} ${r * 0.4} 0 t ${r * 0.4} 0 t ${r * 0.4} 0 t ${r * 0.4} 0" fill="none" stroke="#ffffff" stroke-width="${r * 0.08}"/>` +
    `</g>`;
  const nameX = margin + logo + 0.25 * dpi;
  const bodyTop = margin + logo + 0.6 * dpi;
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${page.width}" height="${page.height}">` +
    `<rect width="100%" height="100%" fill="#ffffff"/>` +
    emblem +
    `<text x="${nameX}" y="${margin + r * 0.9}" font-family="DejaVu Sans" font-weight="bold" font-size="${fontSize * 1.5}">${escapeXml(sender)}</text>` +
    `<text x="${nameX}" y="${margin + r * 1.55}" font-family="DejaVu Sans" font-size="${fontSize * 0.8}">${escapeXml(address)}</text>` +
    `<rect x="${margin}" y="${margin + logo + 0.2 * dpi}" width="${page.width - 2 * margin}" height="${Math.max(2, dpi / 100)}" fill="#000000"/>` +
    `<g font-family="DejaVu Sans" font-size="${fontSize}" fill="#000000">` +
    letter.map((line, i) => `<text x="${margin}" y="${bodyTop + i * fontSize * 1.5}" xml:space="preserve">${escapeXml(line)}</text>`).join("") +
    `</g></svg>`;
  return { pixels: await drawPage(svg, page), ...page, text: [sender, address, ...letter].join("\n") };
}
