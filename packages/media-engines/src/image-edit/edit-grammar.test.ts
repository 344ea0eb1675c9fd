import { UnsupportedParameterError } from "../errors";
import type { EditPlan, EditStep } from "../provider";
import { SUPPORTED_INSTRUCTIONS, parseEditPrompt, splitInstructions } from "./edit-grammar";

const steps = (prompt: string): EditStep[] => parseEditPrompt(prompt).steps;

/** Every instruction form of the documented grammar, in English and Russian, with the step it means. */
const SINGLE: [string, EditStep][] = [
  // rotate
  ["rotate 90", { op: "rotate", degrees: 90 }],
  ["Rotate 180 degrees", { op: "rotate", degrees: 180 }],
  ["rotate by 270°", { op: "rotate", degrees: 270 }],
  ["rotate 45 deg", { op: "rotate", degrees: 45 }],
  ["rotate 90 counterclockwise", { op: "rotate", degrees: 270 }],
  ["rotate the image 90 degrees clockwise", { op: "rotate", degrees: 90 }],
  ["rotate anticlockwise by 90 degrees", { op: "rotate", degrees: 270 }],
  ["rotate -90", { op: "rotate", degrees: 270 }],
  ["rotate left", { op: "rotate", degrees: 270 }],
  ["turn right", { op: "rotate", degrees: 90 }],
  ["turn upside down", { op: "rotate", degrees: 180 }],
  ["повернуть на 90", { op: "rotate", degrees: 90 }],
  ["Поверни на 45 градусов", { op: "rotate", degrees: 45 }],
  ["повернуть изображение на 90 градусов против часовой стрелки", { op: "rotate", degrees: 270 }],
  ["повернуть на 90° по часовой стрелке", { op: "rotate", degrees: 90 }],
  ["повернуть влево", { op: "rotate", degrees: 270 }],
  ["повернуть направо", { op: "rotate", degrees: 90 }],
  ["перевернуть вверх ногами", { op: "rotate", degrees: 180 }],
  // flip
  ["flip", { op: "flip", axis: "horizontal" }],
  ["mirror", { op: "flip", axis: "horizontal" }],
  ["flip horizontally", { op: "flip", axis: "horizontal" }],
  ["flip the image vertically", { op: "flip", axis: "vertical" }],
  ["flip upside down", { op: "flip", axis: "vertical" }],
  ["отразить", { op: "flip", axis: "horizontal" }],
  ["отзеркалить", { op: "flip", axis: "horizontal" }],
  ["отразить по горизонтали", { op: "flip", axis: "horizontal" }],
  ["отразить по вертикали", { op: "flip", axis: "vertical" }],
  // resize
  ["resize to 800x600", { op: "resize", width: 800, height: 600, fit: "inside" }],
  ["resize to 800 x 600 px", { op: "resize", width: 800, height: 600, fit: "inside" }],
  ["resize to exactly 800x600", { op: "resize", width: 800, height: 600, fit: "fill" }],
  ["stretch to 800x600", { op: "resize", width: 800, height: 600, fit: "fill" }],
  ["resize to width 1024", { op: "resize", width: 1024, fit: "inside" }],
  ["width 1024", { op: "resize", width: 1024, fit: "inside" }],
  ["resize to 1024 px wide", { op: "resize", width: 1024, fit: "inside" }],
  ["resize to height 300", { op: "resize", height: 300, fit: "inside" }],
  ["resize to 50%", { op: "resize", percent: 50, fit: "inside" }],
  ["scale by 25%", { op: "resize", percent: 25, fit: "inside" }],
  ["shrink by 25%", { op: "resize", percent: 75, fit: "inside" }],
  ["enlarge by 50%", { op: "resize", percent: 150, fit: "inside" }],
  ["изменить размер до 800х600", { op: "resize", width: 800, height: 600, fit: "inside" }],
  ["изменить размер ровно до 800x600", { op: "resize", width: 800, height: 600, fit: "fill" }],
  ["уменьшить до 640x480", { op: "resize", width: 640, height: 480, fit: "inside" }],
  ["ширина 800", { op: "resize", width: 800, fit: "inside" }],
  ["уменьшить до ширины 800", { op: "resize", width: 800, fit: "inside" }],
  ["по ширине 800 пикселей", { op: "resize", width: 800, fit: "inside" }],
  ["высота 600", { op: "resize", height: 600, fit: "inside" }],
  ["уменьшить до 50%", { op: "resize", percent: 50, fit: "inside" }],
  ["уменьшить на 25%", { op: "resize", percent: 75, fit: "inside" }],
  ["увеличить на 50%", { op: "resize", percent: 150, fit: "inside" }],
  ["масштаб 200%", { op: "resize", percent: 200, fit: "inside" }],
  // crop
  ["crop to 800x600", { op: "crop", width: 800, height: 600 }],
  ["crop 800x600 at 10,20", { op: "crop", width: 800, height: 600, left: 10, top: 20 }],
  ["crop 800x600+10+20", { op: "crop", width: 800, height: 600, left: 10, top: 20 }],
  ["crop to square", { op: "crop_square" }],
  ["обрезать до 800x600", { op: "crop", width: 800, height: 600 }],
  ["обрезать 800x600 от 10,20", { op: "crop", width: 800, height: 600, left: 10, top: 20 }],
  ["обрезать до квадрата", { op: "crop_square" }],
  // colour
  ["grayscale", { op: "grayscale" }],
  ["greyscale", { op: "grayscale" }],
  ["make it black and white", { op: "grayscale" }],
  ["b&w", { op: "grayscale" }],
  ["convert to monochrome", { op: "grayscale" }],
  ["черно-белое", { op: "grayscale" }],
  ["сделать чёрно-белым", { op: "grayscale" }],
  ["в оттенках серого", { op: "grayscale" }],
  ["обесцветить", { op: "grayscale" }],
  ["sepia", { op: "sepia" }],
  ["apply sepia filter", { op: "sepia" }],
  ["сепия", { op: "sepia" }],
  ["invert", { op: "invert" }],
  ["invert colors", { op: "invert" }],
  ["negative", { op: "invert" }],
  ["инвертировать", { op: "invert" }],
  ["негатив", { op: "invert" }],
  // blur / sharpen
  ["blur", { op: "blur", sigma: 3 }],
  ["blur 5", { op: "blur", sigma: 5 }],
  ["blur by 2.5", { op: "blur", sigma: 2.5 }],
  ["slightly blur", { op: "blur", sigma: 1.5 }],
  ["blur strongly", { op: "blur", sigma: 8 }],
  ["размыть", { op: "blur", sigma: 3 }],
  ["размыть 1,5", { op: "blur", sigma: 1.5 }],
  ["слегка размыть", { op: "blur", sigma: 1.5 }],
  ["сильно размыть", { op: "blur", sigma: 8 }],
  ["sharpen", { op: "sharpen", sigma: 1 }],
  ["sharpen 2", { op: "sharpen", sigma: 2 }],
  ["повысить резкость", { op: "sharpen", sigma: 1 }],
  ["резкость 2", { op: "sharpen", sigma: 2 }],
  // levels
  ["brightness +20%", { op: "brightness", factor: 1.2 }],
  ["brightness -20%", { op: "brightness", factor: 0.8 }],
  ["brightness 150%", { op: "brightness", factor: 1.5 }],
  ["brightness by 10%", { op: "brightness", factor: 1.1 }],
  ["brighten by 30%", { op: "brightness", factor: 1.3 }],
  ["brighter", { op: "brightness", factor: 1.2 }],
  ["make it darker", { op: "brightness", factor: 0.8 }],
  ["darken", { op: "brightness", factor: 0.8 }],
  ["increase brightness by 10%", { op: "brightness", factor: 1.1 }],
  ["яркость +20%", { op: "brightness", factor: 1.2 }],
  ["яркость 120%", { op: "brightness", factor: 1.2 }],
  ["ярче", { op: "brightness", factor: 1.2 }],
  ["сделать ярче на 30%", { op: "brightness", factor: 1.3 }],
  ["темнее", { op: "brightness", factor: 0.8 }],
  ["затемнить на 10%", { op: "brightness", factor: 0.9 }],
  ["уменьшить яркость на 10%", { op: "brightness", factor: 0.9 }],
  ["contrast +20%", { op: "contrast", factor: 1.2 }],
  ["contrast 80%", { op: "contrast", factor: 0.8 }],
  ["increase contrast by 20%", { op: "contrast", factor: 1.2 }],
  ["more contrast", { op: "contrast", factor: 1.2 }],
  ["less contrast", { op: "contrast", factor: 0.8 }],
  ["контраст +20%", { op: "contrast", factor: 1.2 }],
  ["увеличить контрастность на 30%", { op: "contrast", factor: 1.3 }],
  ["уменьшить контраст", { op: "contrast", factor: 0.8 }],
  ["контрастнее", { op: "contrast", factor: 1.2 }],
  ["saturation -30%", { op: "saturation", factor: 0.7 }],
  ["increase saturation", { op: "saturation", factor: 1.2 }],
  ["насыщенность -30%", { op: "saturation", factor: 0.7 }],
  ["увеличить насыщенность на 50%", { op: "saturation", factor: 1.5 }],
];

const OUTPUT: [string, Partial<EditPlan>][] = [
  ["convert to png", { format: "png" }],
  ["save as jpeg", { format: "jpeg" }],
  ["save as JPG", { format: "jpeg" }],
  ["convert it to webp", { format: "webp" }],
  ["to png", { format: "png" }],
  ["webp", { format: "webp" }],
  ["format png", { format: "png" }],
  ["конвертировать в png", { format: "png" }],
  ["сохранить как jpeg", { format: "jpeg" }],
  ["в формате webp", { format: "webp" }],
  ["quality 80", { quality: 80 }],
  ["jpeg quality 55%", { quality: 55 }],
  ["качество 70", { quality: 70 }],
];

describe("parseEditPrompt: every documented instruction", () => {
  test.each(SINGLE)("%s", (prompt, step) => {
    expect(steps(prompt)).toEqual([step]);
  });

  test.each(OUTPUT)("%s", (prompt, output) => {
    expect(parseEditPrompt(prompt)).toEqual({ version: "v1", steps: [], ...output });
  });
});

describe("parseEditPrompt: several instructions", () => {
  test.each([
    ["rotate 90, grayscale", ["rotate", "grayscale"]],
    ["rotate 90 then resize to 50% and sharpen", ["rotate", "resize", "sharpen"]],
    ["black and white and then crop to square", ["grayscale", "crop_square"]],
    ["flip; blur 2. invert", ["flip", "blur", "invert"]],
    ["повернуть на 90 и отразить", ["rotate", "flip"]],
    ["черно-белое, затем размыть 1,5 потом обрезать до квадрата", ["grayscale", "blur", "crop_square"]],
    ["повернуть влево, а затем сепия", ["rotate", "sepia"]],
  ])("%s", (prompt, ops) => {
    expect(steps(prompt).map((s) => s.op)).toEqual(ops);
  });

  test("format and quality apply to the output wherever they stand; the plan is plain JSON", () => {
    const plan = parseEditPrompt("convert to webp, rotate 90, quality 60, resize to width 1024");
    expect(plan).toEqual({
      version: "v1",
      format: "webp",
      quality: 60,
      steps: [
        { op: "rotate", degrees: 90 },
        { op: "resize", width: 1024, fit: "inside" },
      ],
    });
    expect(JSON.parse(JSON.stringify(plan))).toEqual(plan);
  });

  test("decimal commas and dots are not separators", () => {
    expect(splitInstructions("blur 1.5, sharpen 0,5")).toEqual(["blur 1.5", "sharpen 0,5"]);
  });
});

describe("parseEditPrompt: refusals", () => {
  test.each(["make it look like van gogh", "добавить котика", "rotate 90, remove the background", "resize", "", "   "])(
    "%j is refused with the list of what is supported",
    (prompt) => {
      const error = (() => {
        try {
          parseEditPrompt(prompt);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(UnsupportedParameterError);
      expect(error).toMatchObject({ code: "unsupported_parameter", parameter: "prompt", supported: SUPPORTED_INSTRUCTIONS });
      expect((error as Error).message).toContain("rotate 90|180|270");
      expect((error as Error).message).toContain("повернуть на 90");
    },
  );

  test("the instruction not understood is named", () => {
    expect(() => parseEditPrompt("rotate 90, remove the background")).toThrow(/unsupported instruction "remove the background"/);
  });

  test.each([
    ["rotate 400", /between -360 and 360/],
    ["resize to 0x100", /width must be a whole number/],
    ["resize to 20000x100", /width must be a whole number from 1 to 16383/],
    ["resize to 0%", /percentage/],
    ["blur 100", /blur sigma/],
    ["sharpen 50", /sharpen sigma/],
    ["brightness 1000%", /between 5% and 500%/],
    ["quality 0", /quality must be/],
    ["quality 101", /quality must be/],
  ])("%s: out of range", (prompt, message) => {
    expect(() => parseEditPrompt(prompt)).toThrow(message);
  });

  test("too long or too many instructions", () => {
    expect(() => parseEditPrompt("rotate 90, ".repeat(21))).toThrow(/at most 20 instructions/);
    expect(() => parseEditPrompt("x".repeat(1001))).toThrow(/longer than 1000/);
  });
});
