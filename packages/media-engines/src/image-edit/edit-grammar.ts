import { UnsupportedParameterError } from "../errors";
import type { EditPlan, EditStep, OutputFormat } from "../provider";

/**
 * The instruction grammar of the local image-edit model's `prompt`, in English and in Russian.
 *
 * A prompt is one or more instructions, applied in order, joined by `,` `;` `.` or the words
 * `then`, `and`, `and then`, `after that` / `и`, `затем`, `потом`, `после этого`, `а затем`.
 * Case does not matter, `ё` = `е`, and `800x600` may be written with `х` (Cyrillic) or `×`.
 * Numbers may use a decimal point or comma (`1.5`, `1,5`).
 *
 * | instruction | English | Russian |
 * |---|---|---|
 * | rotate (clockwise) | `rotate 90`, `rotate 45 degrees`, `rotate 90 counterclockwise`, `rotate left`/`right`, `turn upside down` | `повернуть на 90`, `поверни на 45 градусов`, `повернуть на 90 против часовой стрелки`, `повернуть влево`/`вправо`, `перевернуть вверх ногами` |
 * | mirror | `flip`, `mirror`, `flip horizontally`, `flip vertically` | `отразить`, `отзеркалить`, `отразить по горизонтали`, `отразить по вертикали` |
 * | resize (keeps proportions within WxH) | `resize to 800x600`, `resize to width 800`, `resize to height 600`, `resize to 50%`, `shrink by 25%`, `enlarge by 50%`, `resize to exactly 800x600` (stretches) | `изменить размер до 800x600`, `ширина 800`, `высота 600`, `уменьшить до 50%`, `уменьшить на 25%`, `увеличить на 50%`, `изменить размер ровно до 800x600` |
 * | crop (centred, or from X,Y) | `crop to 800x600`, `crop 800x600 at 10,20`, `crop 800x600+10+20`, `crop to square` | `обрезать до 800x600`, `обрезать 800x600 от 10,20`, `обрезать до квадрата` |
 * | grey | `grayscale`, `greyscale`, `black and white`, `b&w`, `monochrome` | `черно-белое`, `оттенки серого`, `обесцветить` |
 * | blur (sigma 0.3-50, default 3) | `blur`, `blur 5`, `slightly blur`, `blur strongly` | `размыть`, `размыть 5`, `слегка размыть`, `сильно размыть` |
 * | sharpen (sigma 0.3-10, default 1) | `sharpen`, `sharpen 2` | `повысить резкость`, `резкость 2` |
 * | brightness | `brightness +20%`, `brightness 120%`, `brighten by 20%`, `darken`, `brighter`, `darker` | `яркость +20%`, `яркость 120%`, `ярче на 20%`, `затемнить`, `ярче`, `темнее` |
 * | contrast | `contrast +20%`, `increase contrast by 20%`, `less contrast` | `контраст +20%`, `увеличить контрастность на 20%`, `уменьшить контраст` |
 * | saturation | `saturation -30%`, `increase saturation` | `насыщенность -30%`, `увеличить насыщенность` |
 * | sepia | `sepia` | `сепия` |
 * | invert colours | `invert`, `negative` | `инвертировать`, `негатив` |
 * | output format | `convert to png`, `save as jpeg`, `webp` | `конвертировать в png`, `сохранить как jpeg`, `в формате webp` |
 * | output quality (1-100, JPEG/WebP) | `quality 80` | `качество 80` |
 *
 * A signed percentage changes by that much (`+20%` = x1.2); an unsigned one after the noun sets the level
 * (`brightness 120%` = x1.2). Without a number, brighter/darker/more/less mean 20 %. The image is always
 * turned upright from its EXIF orientation first. Format and quality apply to the output whatever their
 * place in the prompt (the last one given wins); without a format the output keeps the input's (PNG for
 * inputs other than PNG, JPEG and WebP).
 */
export const SUPPORTED_INSTRUCTIONS: readonly string[] = [
  "rotate 90|180|270|<degrees> [clockwise|counterclockwise] / повернуть на 90",
  "rotate left|right / повернуть влево|вправо",
  "flip [horizontally|vertically], mirror / отразить [по горизонтали|по вертикали]",
  "resize to WxH | to width N | to height N | to N% / изменить размер до WxH, ширина N, высота N, уменьшить до N%",
  "crop to WxH [at X,Y] | crop to square / обрезать до WxH [от X,Y], обрезать до квадрата",
  "grayscale, black and white / черно-белое, оттенки серого",
  "blur [sigma] / размыть [N]",
  "sharpen [sigma] / повысить резкость [N]",
  "brightness +N% | N%, brighter, darker / яркость +N%, ярче, темнее",
  "contrast +N% | N% / контраст +N%",
  "saturation +N% | N% / насыщенность +N%",
  "sepia / сепия",
  "invert, negative / инвертировать, негатив",
  "convert to png|jpeg|webp / конвертировать в png|jpeg|webp",
  "quality 1-100 / качество 1-100",
];

export const MAX_PROMPT_LENGTH = 1000;
export const MAX_EDIT_STEPS = 20;
/** Largest width or height a resize may ask for (WebP's limit is 16383). */
export const MAX_EDIT_SIDE = 16_383;

const SUPPORTED_TEXT = "supported instructions (English or Russian, joined by , ; then and и затем): " + SUPPORTED_INSTRUCTIONS.join("; ");

function refuse(message: string): never {
  throw new UnsupportedParameterError("prompt", `${message}; ${SUPPORTED_TEXT}`, SUPPORTED_INSTRUCTIONS);
}

// ---- normalisation and splitting -----------------------------------------------------------------------

function normalise(prompt: string): string {
  return (
    prompt
      .toLowerCase()
      .replace(/ё/g, "е")
      .replace(/[\u2010-\u2015\u2212]/g, "-")
      .replace(/(\d)\s*[xх×*]\s*(\d)/g, "$1x$2")
      .replace(/\bblack[ -]?(?:and|&)[ -]?white\b/g, "grayscale")
      .replace(/\b(?:please|pls)\b/g, " ")
      .replace(/(^|\s)пожалуйста(?=\s|[,.;]|$)/g, " ")
      // "°" glued to the number, and "%" after a space, are one token with it.
      .replace(/\s*°/g, " degrees")
      .replace(/(\d)\s+%/g, "$1%")
      .replace(/[!?]/g, " ")
      .replace(/\s+/g, " ")
      .trim()
  );
}

/** Punctuation between instructions; a comma or dot between digits is a decimal separator instead. */
const PUNCTUATION = /\s*(?:;|,(?!\d)|\.(?!\d))\s*/u;
/** Joining words, as whole words (JavaScript's \b does not see Cyrillic letters, so spaces delimit them). */
const JOINING_WORDS = /(?:^|\s+)(?:and then|then|and|after that|also|а затем|а потом|а также|после этого|затем|потом|и)(?=\s|$)\s*/u;

export function splitInstructions(prompt: string): string[] {
  return normalise(prompt)
    .split(PUNCTUATION)
    .flatMap((part) => part.split(JOINING_WORDS))
    .map((part) => part.trim())
    .filter((part) => part !== "");
}

// ---- rules ---------------------------------------------------------------------------------------------

const NUM = String.raw`(\d+(?:[.,]\d+)?)`;
const OBJ = String.raw`(?: (?:the )?(?:image|picture|photo|it|изображение|картинку|фото|фотографию))?`;

const num = (text: string | undefined): number => Number((text ?? "").replace(",", "."));

type Rule = [RegExp, (m: RegExpExecArray) => EditStep | Output];
type Output = { output: { format?: OutputFormat; quality?: number } };

function rx(source: string): RegExp {
  return new RegExp(`^${source}$`, "u");
}

const CCW = String.raw`counter-?clockwise|anti-?clockwise|ccw|left|против часовой(?: стрелки)?|влево|налево`;
const CW = String.raw`clockwise|cw|right|по часовой(?: стрелке)?|вправо|направо`;
const ROTATE_VERB = String.raw`(?:rotate|turn|повернуть|поверни|повернуть|поворот|повороти)`;
const DEGREES = String.raw`(?: ?(?:degrees?|deg|градус(?:а|ов)?|град))?`;

function rotation(degrees: number, direction: string | undefined): EditStep {
  if (!Number.isFinite(degrees) || Math.abs(degrees) > 360) refuse(`rotation must be between -360 and 360 degrees, got ${degrees}`);
  const ccw = direction !== undefined && new RegExp(`^(?:${CCW})$`, "u").test(direction);
  const signed = ccw ? -degrees : degrees;
  return { op: "rotate", degrees: ((signed % 360) + 360) % 360 };
}

const FORMAT = String.raw`(png|jpe?g|webp)`;
const formatOf = (name: string | undefined): OutputFormat => (name === "png" ? "png" : name === "webp" ? "webp" : "jpeg");

const SHRINK = String.raw`(?:shrink|reduce|downscale|decrease|уменьшить|уменьши|сжать|сожми)`;
const ENLARGE = String.raw`(?:enlarge|upscale|increase|увеличить|увеличь)`;
const RESIZE = String.raw`(?:resize|scale|rescale|изменить размер|измени размер|масштабировать|масштабируй|масштаб|размер)`;
const ANY_RESIZE = `(?:${RESIZE}|${SHRINK}|${ENLARGE})`;
const PX = String.raw`(?: ?(?:px|pixels|пикс(?:елей|еля)?))?`;

function dimension(value: number, what: string): number {
  if (!Number.isInteger(value) || value < 1 || value > MAX_EDIT_SIDE) refuse(`${what} must be a whole number from 1 to ${MAX_EDIT_SIDE}, got ${value}`);
  return value;
}

function percent(value: number): number {
  if (!(value > 0 && value <= 1000)) refuse(`a size percentage must be above 0 and at most 1000, got ${value}`);
  return value;
}

/** "by N%" after a shrinking verb takes N% away, after an enlarging one adds it; otherwise it is the target. */
function percentFor(verb: string, preposition: string | undefined, value: number): number {
  const by = preposition === "by" || preposition === "на";
  if (by && new RegExp(`^${SHRINK}$`, "u").test(verb)) return percent(100 - value);
  if (by && new RegExp(`^${ENLARGE}$`, "u").test(verb)) return percent(100 + value);
  return percent(value);
}

function factor(value: number, what: string): number {
  if (!(value >= 0.05 && value <= 5)) refuse(`${what} must end up between 5% and 500%, got ${Math.round(value * 100)}%`);
  return Math.round(value * 1000) / 1000;
}

function sigma(value: number, min: number, max: number, what: string): number {
  if (!(value >= min && value <= max)) refuse(`${what} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** brightness / contrast / saturation share their forms. */
function levelRules(op: "brightness" | "contrast" | "saturation", nouns: string, up: string, down: string): Rule[] {
  const set = (f: number): EditStep => ({ op, factor: factor(f, op) });
  const more = String.raw`(?:increase|raise|boost|more|add|увеличить|увеличь|повысить|повысь|добавить|добавь|больше)`;
  const less = String.raw`(?:decrease|reduce|lower|less|уменьшить|уменьши|понизить|понизь|снизить|снизь|меньше)`;
  const byPct = String.raw`(?: (?:by|на) ${NUM}%)?`;
  return [
    [
      rx(String.raw`(?:${nouns})(?: (by|to|на|до))? ([+-])?${NUM}%`),
      (m) => {
        const relative = m[2] !== undefined || m[1] === "by" || m[1] === "на";
        return set(relative ? 1 + (m[2] === "-" ? -1 : 1) * (num(m[3]) / 100) : num(m[3]) / 100);
      },
    ],
    [rx(`${more}${OBJ} (?:the )?(?:${nouns})${byPct}`), (m) => set(1 + num(m[1] ?? "20") / 100)],
    [rx(`${less}${OBJ} (?:the )?(?:${nouns})${byPct}`), (m) => set(1 - num(m[1] ?? "20") / 100)],
    [rx(`(?:make (?:it |the image )?|сделать |сделай )?(?:${up})${OBJ}${byPct}`), (m) => set(1 + num(m[1] ?? "20") / 100)],
    [rx(`(?:make (?:it |the image )?|сделать |сделай )?(?:${down})${OBJ}${byPct}`), (m) => set(1 - num(m[1] ?? "20") / 100)],
  ];
}

const RULES: Rule[] = [
  // rotate
  [rx(`${ROTATE_VERB}${OBJ}(?: (?:by|на))? (-?${NUM})${DEGREES}(?: (${CCW}|${CW}))?`), (m) => rotation(num(m[1]), m[3])],
  [rx(`${ROTATE_VERB}${OBJ} (${CCW}|${CW})(?: (?:by|на))? (-?${NUM})${DEGREES}`), (m) => rotation(num(m[2]), m[1])],
  [rx(`${ROTATE_VERB}${OBJ} (${CCW}|${CW})`), (m) => rotation(90, m[1])],
  [rx(String.raw`(?:turn|rotate|перевернуть|переверни)${OBJ} (?:upside down|вверх ногами)`), () => ({ op: "rotate", degrees: 180 })],
  // flip / mirror
  [
    rx(
      String.raw`(?:flip|mirror|отразить|отрази|отзеркалить|отзеркаль|зеркально отразить|зеркально)${OBJ}(?: (horizontally|horizontal|left[- ]right|left to right|(?:по )?горизонтали))?`,
    ),
    () => ({ op: "flip", axis: "horizontal" }),
  ],
  [
    rx(
      String.raw`(?:flip|mirror|отразить|отрази|отзеркалить|отзеркаль|перевернуть|переверни)${OBJ} (?:vertically|vertical|upside[- ]down|top[- ]bottom|top to bottom|(?:по )?вертикали)`,
    ),
    () => ({ op: "flip", axis: "vertical" }),
  ],
  // resize
  [
    rx(`${ANY_RESIZE}${OBJ}(?: (exactly|ровно|точно))?(?: (?:down |up )?(?:to|до|в))?(?: (exactly|ровно|точно))? (\\d+)x(\\d+)${PX}`),
    (m) => ({
      op: "resize",
      width: dimension(num(m[3]), "width"),
      height: dimension(num(m[4]), "height"),
      fit: m[1] || m[2] ? "fill" : "inside",
    }),
  ],
  [
    rx(`(?:stretch|растянуть|растяни)${OBJ}(?: (?:to|до))? (\\d+)x(\\d+)${PX}`),
    (m) => ({ op: "resize", width: dimension(num(m[1]), "width"), height: dimension(num(m[2]), "height"), fit: "fill" }),
  ],
  [
    rx(`(?:${ANY_RESIZE}${OBJ} )?(?:(?:to|до|по) )?(?:(?:a |the )?width|ширин[аеыу])(?: (?:of|to|до|=|:))? (\\d+)${PX}`),
    (m) => ({ op: "resize", width: dimension(num(m[1]), "width"), fit: "inside" }),
  ],
  [rx(`${ANY_RESIZE}${OBJ}(?: to)? (\\d+)${PX} wide`), (m) => ({ op: "resize", width: dimension(num(m[1]), "width"), fit: "inside" })],
  [
    rx(`(?:${ANY_RESIZE}${OBJ} )?(?:(?:to|до|по) )?(?:(?:a |the )?height|высот[аеыу])(?: (?:of|to|до|=|:))? (\\d+)${PX}`),
    (m) => ({ op: "resize", height: dimension(num(m[1]), "height"), fit: "inside" }),
  ],
  [rx(`${ANY_RESIZE}${OBJ}(?: to)? (\\d+)${PX} (?:tall|high)`), (m) => ({ op: "resize", height: dimension(num(m[1]), "height"), fit: "inside" })],
  [
    rx(`(${RESIZE}|${SHRINK}|${ENLARGE})${OBJ}(?: (to|by|до|на|в))? ${NUM}%`),
    (m) => ({ op: "resize", percent: percentFor(m[1] ?? "", m[2], num(m[3])), fit: "inside" }),
  ],
  // crop
  [
    rx(
      String.raw`(?:crop|cut|обрезать|обрежь|кадрировать|кадрируй|обрезка)${OBJ}(?: (?:to|до))? (\d+)x(\d+)(?:(?: (?:at|from|offset|от|с|со смещением|в точке))? ?(\d+),(\d+)| ?\+(\d+)\+(\d+))?`,
    ),
    (m) => {
      const width = dimension(num(m[1]), "crop width");
      const height = dimension(num(m[2]), "crop height");
      const left = m[3] ?? m[5];
      const top = m[4] ?? m[6];
      return left === undefined ? { op: "crop", width, height } : { op: "crop", width, height, left: num(left), top: num(top) };
    },
  ],
  [
    rx(
      String.raw`(?:crop|cut|обрезать|обрежь|кадрировать|кадрируй)${OBJ} (?:to |into |as )?(?:a )?(?:square|до квадрата|по квадрату|в квадрат|квадратом)|square crop`,
    ),
    () => ({ op: "crop_square" }),
  ],
  // colour
  [
    rx(
      String.raw`(?:make (?:it |the image )?|convert (?:it |the image )?to |turn (?:it )?(?:in)?to |сделать |сделай |перевести в |переведи в |преобразовать в |в )?(?:grayscale|greyscale|gr[ae]y ?scale|gr[ae]y|b ?& ?w|b/w|monochrome|desaturate|черно-бел(?:ый|ое|ым|ую|ом|ая|ой)|черно белое|оттенк(?:и|ах) серого|сер(?:ый|ое|ым)|монохром(?:ный|ное|ным)?|обесцветить|обесцвети)`,
    ),
    () => ({ op: "grayscale" }),
  ],
  [
    rx(
      String.raw`(?:apply |add |make (?:it )?|сделать |сделай |тонировать в |в )?(?:sepia|сепия|сепию|сепии|эффект сепии)(?: tone| filter| effect| фильтр| эффект)?`,
    ),
    () => ({ op: "sepia" }),
  ],
  [
    rx(
      String.raw`(?:invert|negate|negative|make (?:it )?(?:a )?negative|invert colou?rs|инвертировать|инвертируй|инвертировать цвета|инверсия|инверсия цветов|негатив|сделать негатив)`,
    ),
    () => ({ op: "invert" }),
  ],
  // blur / sharpen
  [
    rx(String.raw`(?:slightly blur|blur slightly|blur a (?:little|bit)|slight blur|слегка размыть|слегка размой|немного размыть|легкое размытие)${OBJ}`),
    () => ({ op: "blur", sigma: 1.5 }),
  ],
  [
    rx(String.raw`(?:blur strongly|blur heavily|blur a lot|strong blur|heavy blur|сильно размыть|сильно размой|сильное размытие)${OBJ}`),
    () => ({ op: "blur", sigma: 8 }),
  ],
  [
    rx(`(?:blur|gaussian blur|soften|размыть|размой|размытие|смягчить)${OBJ}(?: (?:by|with|sigma|radius|на|с радиусом|радиус|силой))?(?: ${NUM})?`),
    (m) => ({ op: "blur", sigma: sigma(m[1] === undefined ? 3 : num(m[1]), 0.3, 50, "blur sigma") }),
  ],
  [
    rx(
      `(?:sharpen|make (?:it )?sharper|increase sharpness|повысить резкость|повысь резкость|увеличить резкость|увеличь резкость|резкость|сделать резче|сделай резче|резче)${OBJ}(?: (?:by|sigma|на))?(?: ${NUM})?`,
    ),
    (m) => ({ op: "sharpen", sigma: sigma(m[1] === undefined ? 1 : num(m[1]), 0.3, 10, "sharpen sigma") }),
  ],
  // levels
  ...levelRules(
    "brightness",
    "brightness|яркость|яркости",
    "brighten|lighten|brighter|lighter|ярче|осветлить|освет(?:ли)?|светлее",
    "darken|darker|темнее|затемнить|затемни",
  ),
  ...levelRules("contrast", "contrast|контраст|контрастность|контрастности", "more contrasty|контрастнее", "less contrasty|менее контрастн(?:ым|ое)"),
  ...levelRules(
    "saturation",
    "saturation|насыщенность|насыщенности",
    "more saturated|saturate|насыщеннее",
    "less saturated|desaturate slightly|менее насыщенн(?:ым|ое)",
  ),
  // output
  [
    rx(
      `(?:(?:convert|save|export|output|change format|конвертировать|конвертируй|преобразовать|преобразуй|сохранить|сохрани|перевести|переведи|экспортировать)${OBJ} )?(?:(?:to|as|in|into|в формате|в формат|в|как) )?(?:(?:the )?format |формат )?${FORMAT}(?: format| file| формате)?`,
    ),
    (m) => ({ output: { format: formatOf(m[1]) } }),
  ],
  [
    rx(String.raw`(?:(?:at|with|set) )?(?:(?:jpe?g|webp|output) )?(?:quality|качеств[оаeу])(?: (?:to|of|на|до|=|:))? ?(\d+)%?`),
    (m) => {
      const quality = num(m[1]);
      if (!Number.isInteger(quality) || quality < 1 || quality > 100) refuse(`quality must be a whole number from 1 to 100, got ${quality}`);
      return { output: { quality } };
    },
  ],
];

function parseInstruction(instruction: string): EditStep | Output {
  for (const [pattern, build] of RULES) {
    const match = pattern.exec(instruction);
    if (match) return build(match);
  }
  return refuse(`unsupported instruction "${instruction}"`);
}

/**
 * Turns a prompt into an edit plan, or throws UnsupportedParameterError (HTTP 400 `unsupported_parameter`)
 * naming the instruction it did not understand and listing the supported ones. Runs before any money is
 * reserved; the plan is plain JSON, recorded on the job and given to the engine's run().
 */
export function parseEditPrompt(prompt: string): EditPlan {
  if (typeof prompt !== "string" || prompt.trim() === "") refuse("the prompt is empty");
  if (prompt.length > MAX_PROMPT_LENGTH) refuse(`the prompt is longer than ${MAX_PROMPT_LENGTH} characters`);
  const plan: EditPlan = { version: "v1", steps: [] };
  for (const instruction of splitInstructions(prompt)) {
    const parsed = parseInstruction(instruction);
    if ("output" in parsed) {
      if (parsed.output.format) plan.format = parsed.output.format;
      if (parsed.output.quality !== undefined) plan.quality = parsed.output.quality;
    } else {
      plan.steps.push(parsed);
    }
  }
  if (plan.steps.length > MAX_EDIT_STEPS) refuse(`at most ${MAX_EDIT_STEPS} instructions per prompt, got ${plan.steps.length}`);
  if (plan.steps.length === 0 && !plan.format && plan.quality === undefined) refuse("the prompt has no instruction");
  return plan;
}
