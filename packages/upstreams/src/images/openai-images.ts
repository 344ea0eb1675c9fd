import type { Provider } from "@meter/contracts";
import { FormData } from "undici";
import { z } from "zod";
import type { ChatUsage } from "../chat/chat-provider";
import { usageOf } from "../chat/usage";
import { asUpstreamError, endpointOf } from "../chat/remote-chat";
import { postUpstream } from "../http/upstream-http";
import { UpstreamError } from "../upstream-error";
import { apiKeyOf, type UpstreamKeys } from "../upstream-keys";

/** The settings of an edit the Images API takes, passed on as form fields when the job gives them. */
export const IMAGE_EDIT_SETTINGS = ["size", "quality", "background", "output_format"] as const;
export type ImageEditSetting = (typeof IMAGE_EDIT_SETTINGS)[number];

export interface ImageEditRequest {
  /** The model name sent upstream (catalog `upstream_model`). */
  model: string;
  /** The job's prompt, as the client wrote it. */
  prompt: string;
  image: { bytes: Buffer; filename: string; mimeType: string };
  settings: Partial<Record<ImageEditSetting, string>>;
}

export interface ImageEditResult {
  /** The edited image's bytes (its type is whatever they are: the caller sniffs them). */
  image: Buffer;
  /** The tokens the upstream reported, for the operator; undefined when it reported none usable. */
  usage?: ChatUsage;
}

/** An edited image in base64 is a few MiB; a high-quality large one stays well under this. */
const MAX_ANSWER_BYTES = 96 * 1024 * 1024;

/** The fields of an Images API answer we read: the first image's base64, and the usage. */
const ImagesAnswer = z.looseObject({
  data: z.array(z.looseObject({ b64_json: z.string().min(1).optional(), url: z.string().optional() })).min(1),
  usage: z.looseObject({ input_tokens: z.unknown().optional(), output_tokens: z.unknown().optional() }).nullish(),
});

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The Images API's edits endpoint (`openai-images`: OpenAI's gpt-image models, and servers that speak
 * the same API): `POST {base_url}/images/edits`, multipart, one image. Only `b64_json` is read: an answer
 * that gives a URL instead is an upstream error, and the URL is never fetched (it could point anywhere).
 * A 2xx answer that is not a usable image is `unknown`: the upstream ran and may have charged us.
 */
export async function editImage(
  provider: Provider,
  keys: UpstreamKeys,
  request: ImageEditRequest,
  options: { timeoutMs: number; signal?: AbortSignal },
): Promise<ImageEditResult> {
  const vendor = "openai-images";
  try {
    const apiKey = apiKeyOf(vendor, provider, keys);
    const form = new FormData();
    form.set("model", request.model);
    form.set("prompt", request.prompt);
    form.set("n", "1");
    for (const name of IMAGE_EDIT_SETTINGS) {
      const value = request.settings[name];
      if (value !== undefined) form.set(name, value);
    }
    form.set("image", new Blob([new Uint8Array(request.image.bytes)], { type: request.image.mimeType }), request.image.filename);
    const { status, body } = await postUpstream({
      vendor,
      url: endpointOf(vendor, provider, "/images/edits"),
      headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
      body: { form },
      timeoutMs: options.timeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
      secrets: apiKey ? [apiKey] : [],
      maxResponseBytes: MAX_ANSWER_BYTES,
    });
    return imageOf(body, status);
  } catch (e) {
    throw asUpstreamError(vendor, e);
  }
}

function imageOf(body: unknown, status: number): ImageEditResult {
  const parsed = ImagesAnswer.safeParse(body);
  if (!parsed.success) {
    throw new UpstreamError("unknown", `openai-images: the ${status} answer is not an image list (${parsed.error.issues[0]?.message ?? "bad shape"})`, status);
  }
  const first = parsed.data.data[0]!;
  if (!first.b64_json) {
    const why = first.url ? "a URL instead of b64_json (never fetched)" : "no b64_json";
    throw new UpstreamError("unknown", `openai-images: the ${status} answer has ${why}`, status);
  }
  const b64 = first.b64_json.replace(/\s+/g, "");
  if (!BASE64.test(b64)) throw new UpstreamError("unknown", `openai-images: the ${status} answer's b64_json is not base64`, status);
  const usage = usageOf(parsed.data.usage?.input_tokens, parsed.data.usage?.output_tokens);
  return { image: Buffer.from(b64, "base64"), ...(usage ? { usage } : {}) };
}
