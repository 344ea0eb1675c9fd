import { createHash } from "node:crypto";
import sharp from "sharp";

/**
 * The fake upstream's images: image parts of chat requests, checked as the vendors check them, and the
 * Images API's edits endpoint (multipart in, `b64_json` out), which really edits the image (inverts it)
 * so a test can tell the result from its input.
 */

/** An image a chat request carried, as the fake read it. */
export interface FakeImagePart {
  mediaType: string;
  bytes: number;
  sha256: string;
}

/** What an Images API edit answers; `normal` is a real edited image in `b64_json`. */
export type FakeImagesAnswer =
  | "normal"
  /** `data[0].url` (a link the caller must never fetch) instead of `b64_json`. */
  | "url"
  /** `b64_json` whose bytes are no image. */
  | "not_an_image"
  /** `data: []`. */
  | "no_data";

/** Tokens an image counts as on input, whatever its size (the fake's own rule). */
export const FAKE_IMAGE_TOKENS = 85;

const CHAT_IMAGE_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/** The magic bytes of each type the vendors take. */
function sniff(data: Buffer): string | undefined {
  if (data.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return "image/png";
  if (data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return "image/jpeg";
  if (data.subarray(0, 4).toString("latin1") === "RIFF" && data.subarray(8, 12).toString("latin1") === "WEBP") return "image/webp";
  if (data.subarray(0, 4).toString("latin1") === "GIF8") return "image/gif";
  return undefined;
}

/** An image part's bytes and type, or the vendor's 400 message. */
export function readImage(mediaType: unknown, base64: unknown, where: string): FakeImagePart | string {
  if (typeof mediaType !== "string" || !CHAT_IMAGE_TYPES.includes(mediaType)) {
    return `${where}.media_type: Input should be ${CHAT_IMAGE_TYPES.map((t) => `'${t}'`).join(", ")}`;
  }
  if (typeof base64 !== "string" || base64.length === 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) return `${where}.data: invalid base64 data`;
  const data = Buffer.from(base64, "base64");
  if (sniff(data) !== mediaType) return `${where}: Image does not match the provided media type ${mediaType}`;
  return { mediaType, bytes: data.length, sha256: createHash("sha256").update(data).digest("hex") };
}

/** A `data:<type>;base64,<data>` URL's image (the OpenAI protocols), or the 400 message. */
export function readDataUrl(url: unknown, where: string): FakeImagePart | string {
  const match = typeof url === "string" ? /^data:([^;,]+);base64,(.*)$/s.exec(url) : null;
  if (!match) return `${where}: Invalid image URL: expected a base64-encoded data URL with an image MIME type`;
  return readImage(match[1], match[2], where);
}

/** How an answer names the images the question carried, so a test sees each one arrived as sent. */
export function describeImages(images: readonly FakeImagePart[]): string {
  return images.map((i, n) => ` [image ${n + 1}: ${i.mediaType}, ${i.bytes} bytes]`).join("");
}

const SIZES = ["auto", "1024x1024", "1536x1024", "1024x1536"];
const QUALITIES = ["auto", "low", "medium", "high"];
const BACKGROUNDS = ["auto", "transparent", "opaque"];
const FORMATS = ["png", "jpeg", "webp"];

/** The multipart fields of an edit as recorded in `calls` (the image by its name, type, size and hash). */
export interface FakeEditCall {
  model: string;
  prompt: string;
  n: string | null;
  image: { filename: string; type: string; bytes: number; sha256: string } | null;
  settings: Record<string, string>;
}

/** Parses an Images API edit; the recorded call, or the 400 message OpenAI would give. */
export async function readEdit(
  raw: Buffer,
  contentType: string | undefined,
): Promise<{ call: FakeEditCall; image: Buffer } | { call: unknown; error: string }> {
  let form: FormData;
  try {
    form = await new Request("http://fake/", { method: "POST", headers: { "content-type": contentType ?? "" }, body: new Uint8Array(raw) }).formData();
  } catch {
    return { call: raw.toString("latin1").slice(0, 200), error: "the request body must be multipart/form-data" };
  }
  const text = (name: string) => (typeof form.get(name) === "string" ? (form.get(name) as string) : null);
  const file = form.get("image");
  const bytes = file instanceof Blob ? Buffer.from(await file.arrayBuffer()) : undefined;
  const settings = Object.fromEntries(["size", "quality", "background", "output_format"].flatMap((k) => (text(k) === null ? [] : [[k, text(k)!]])));
  const call: FakeEditCall = {
    model: text("model") ?? "",
    prompt: text("prompt") ?? "",
    n: text("n"),
    image:
      file instanceof File && bytes
        ? { filename: file.name, type: file.type, bytes: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") }
        : null,
    settings,
  };
  if (!call.model) return { call, error: "Missing required parameter: 'model'." };
  if (!call.prompt) return { call, error: "Missing required parameter: 'prompt'." };
  if (!bytes || !call.image) return { call, error: "Missing required parameter: 'image'." };
  if (call.n !== null && call.n !== "1") return { call, error: "Invalid 'n': the fake answers one image." };
  const type = sniff(bytes);
  if (type === undefined || type === "image/gif" || type !== call.image.type) {
    return {
      call,
      error: `Invalid file 'image': unsupported mimetype ('${call.image.type}'). Supported file formats are 'image/jpeg', 'image/png', and 'image/webp'.`,
    };
  }
  for (const [name, allowed] of [
    ["size", SIZES],
    ["quality", QUALITIES],
    ["background", BACKGROUNDS],
    ["output_format", FORMATS],
  ] as const) {
    if (settings[name] !== undefined && !allowed.includes(settings[name]))
      return { call, error: `Invalid value: '${settings[name]}'. Supported values are: ${allowed.join(", ")}.` };
  }
  return { call, image: bytes };
}

/** The edit's answer: the image inverted, in the asked format (PNG by default), as the Images API shapes it. */
export async function editAnswer(call: FakeEditCall, image: Buffer, answer: FakeImagesAnswer): Promise<unknown> {
  const format = (call.settings.output_format ?? "png") as "png" | "jpeg" | "webp";
  const edited = await sharp(image).negate({ alpha: false }).toFormat(format).toBuffer();
  const promptTokens = Math.ceil(Buffer.byteLength(call.prompt, "utf8") / 4);
  const usage = {
    total_tokens: promptTokens + FAKE_IMAGE_TOKENS + 1056,
    input_tokens: promptTokens + FAKE_IMAGE_TOKENS,
    output_tokens: 1056,
    input_tokens_details: { text_tokens: promptTokens, image_tokens: FAKE_IMAGE_TOKENS },
  };
  const base = { created: Math.floor(Date.now() / 1000), background: call.settings.background ?? "opaque", output_format: format, usage };
  switch (answer) {
    case "url":
      return { ...base, data: [{ url: "http://169.254.169.254/latest/meta-data/edited.png" }] };
    case "not_an_image":
      return { ...base, data: [{ b64_json: Buffer.from("this is not an image at all").toString("base64") }] };
    case "no_data":
      return { ...base, data: [] };
    case "normal":
      return { ...base, data: [{ b64_json: edited.toString("base64"), revised_prompt: call.prompt }] };
  }
}
