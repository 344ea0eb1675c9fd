import { fixture } from "../../test/support/fixtures";
import { portraitJpeg } from "../../test/support/generated-inputs";
import { UnsupportedMediaTypeError } from "../errors";
import { createLocalImageDetectionEngine, type ImageDetectionDocument } from "./image-detection.engine";

const engine = createLocalImageDetectionEngine({ limits: { maxFiles: 2 } });

beforeAll(() => engine.warmUp(), 60_000);

test("finds the face and the person in a portrait, with boxes inside the image", async () => {
  const file = { data: await portraitJpeg(), mimeType: "image/jpeg" };
  await expect(engine.measure({ files: [file], settings: {} })).resolves.toEqual({ unit: "image", quantity: 1 });
  const result = await engine.run({ files: [file], settings: {} });
  expect(result).toMatchObject({ unit: "image", quantity: 1, mimeType: "application/json" });
  const document = JSON.parse(result.data.toString("utf8")) as ImageDetectionDocument;
  const [image] = document.images;
  expect(document.min_confidence).toBe(0.4);
  expect(image).toMatchObject({ width: 290, height: 300, face_count: 1, object_counts: { person: 1 } });
  const face = image!.faces[0]!;
  expect(face.score).toBeGreaterThan(0.8);
  expect(face.box.x).toBeGreaterThanOrEqual(0);
  expect(face.box.x + face.box.width).toBeLessThanOrEqual(290);
  expect(face.box.y + face.box.height).toBeLessThanOrEqual(300);
  expect(face.box.width).toBeGreaterThan(30);
});

test("no face in a drawing of a circle and a box; a higher threshold reports less", async () => {
  const drawing = fixture("exif.jpg").file;
  const run = async (min_confidence?: number) =>
    (
      JSON.parse(
        (await engine.run({ files: [drawing], settings: min_confidence === undefined ? {} : { min_confidence } })).data.toString("utf8"),
      ) as ImageDetectionDocument
    ).images[0]!;
  const loose = await run(0.2);
  const strict = await run(0.9);
  expect(strict.faces).toEqual([]);
  expect(strict.objects.length).toBeLessThanOrEqual(loose.objects.length);
  expect(loose).toMatchObject({ width: 480, height: 640 });
});

test("only images", async () => {
  await expect(engine.measure({ files: [fixture("text-layer.pdf").file], settings: {} })).rejects.toBeInstanceOf(UnsupportedMediaTypeError);
});
