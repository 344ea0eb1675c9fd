import { randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import {
  describeImages,
  editAnswer,
  FAKE_IMAGE_TOKENS,
  readDataUrl,
  readEdit,
  readImage,
  type FakeImagePart,
  type FakeImagesAnswer,
} from "./fake-upstream-images";

/**
 * A fake model upstream: a real HTTP server speaking four vendor wire protocols closely enough for the
 * official SDKs to parse its answers, with switches for the failures that decide money.
 *
 * - `POST /v1/messages` (Anthropic Messages), base URL `anthropicBaseUrl` (the server root)
 * - `POST /v1/chat/completions` (OpenAI Chat Completions), `POST /v1/responses` (OpenAI Responses) and
 *   `POST /v1/images/edits` (the Images API, multipart), base URL `openaiBaseUrl` (ends in /v1)
 *
 * It answers `Fake reply to: <text of the last user message>`, followed by `[image n: <type>, <bytes>
 * bytes]` for each image that message carried (base64 image blocks, checked against their declared type
 * as the vendors do), counting ceil(UTF-8 bytes / 4) tokens (input: system/instructions plus every
 * message text, and FAKE_IMAGE_TOKENS per image; output: the answer), and honours the request's token
 * limit like a real upstream: it cuts the answer and says so (`max_tokens`, `length`, `incomplete`).
 * Like OpenAI, `/v1/responses` refuses `max_output_tokens` below 16. An image edit answers the image
 * inverted, in `b64_json` (fake-upstream-images.ts).
 */

export type FakeUsageMode =
  /** Usage computed from the texts. */
  | "normal"
  /** No usage in the answer at all. */
  | "missing"
  /** 1_000_000 input and 1_000_000 output tokens, whatever the texts. */
  | "inflated"
  /** Number.MAX_SAFE_INTEGER input and output tokens: valid integers whose cost no hold could cover. */
  | "absurd"
  /** Negative counts (-1 input, -10 output). */
  | "negative";

export interface FakeUpstreamSwitches {
  /** Wait this long after reading a request, before answering (or failing). */
  delayMs?: number;
  /** Answer with this status instead of a reply: the vendor's error JSON, or `errorBody`. */
  status?: number;
  /**
   * The error answer's body: an object is sent as JSON, a string as it is (e.g. an HTML error page).
   * With a 2xx `status` it serves a success answer of any shape (a malformed or truncated reply).
   */
  errorBody?: unknown;
  usage?: FakeUsageMode;
  /**
   * `before-response`: read the request, then destroy the socket without answering.
   * `mid-body`: start a 200 answer (full Content-Length) and destroy the socket halfway through the body.
   */
  drop?: "before-response" | "mid-body";
  /**
   * Only the next n calls get the failure (`drop`, else `status`, else 503); later calls are answered
   * normally. Without it, every call fails while a failure is configured.
   */
  failTimes?: number;
  /** The Retry-After (seconds) sent with a 429 or 503 answer; a 429 sends 1 when not set. */
  retryAfterS?: number;
  /**
   * Only every n-th call gets the configured failure (2: the 2nd, 4th, 6th...: half of them), the
   * others are answered; counted from this setting. A steady share of failures, never n in a row.
   */
  failEvery?: number;
  /** What an image edit answers (a strange answer is still a 200). */
  imagesAnswer?: FakeImagesAnswer;
}

export interface FakeUpstreamCall {
  method: string;
  /** Without the query string. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body, the raw text when it was not JSON, or an image edit's fields (FakeEditCall). */
  body: unknown;
}

export interface FakeUpstream {
  /** The server root, e.g. http://127.0.0.1:40123 */
  readonly url: string;
  readonly anthropicBaseUrl: string;
  readonly openaiBaseUrl: string;
  /** Every request received, in order (including failed and dropped ones). */
  readonly calls: FakeUpstreamCall[];
  callCount(): number;
  /** Merges switches into the current ones. */
  configure(switches: FakeUpstreamSwitches): void;
  /**
   * Refuses connections (true: the port stops listening and open connections are closed, so a request
   * is never sent) or takes them again on the same port (false).
   */
  refuseConnections(refuse: boolean): Promise<void>;
  /** Back to normal answers, and forgets the recorded calls (connections are taken again). */
  reset(): void;
  close(): Promise<void>;
}

export type FakeVendor = "anthropic" | "openai";

interface Conversation {
  model: string;
  lastUserText: string;
  inputText: string;
  /** Images in the whole conversation, each counted as FAKE_IMAGE_TOKENS input tokens. */
  images: number;
  maxTokens: number | undefined;
}

const FAKE_BYTES_PER_TOKEN = 4;

export async function startFakeUpstream(): Promise<FakeUpstream> {
  let switches: FakeUpstreamSwitches = {};
  let failuresLeft: number | undefined;
  let sinceFailEvery = 0;
  const calls: FakeUpstreamCall[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();

  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        timers.delete(t);
        resolve();
      }, ms);
      timers.add(t);
    });

  /** Whether this call gets the configured failure; counts it down when limited by failTimes. */
  const takeFailure = (): boolean => {
    const configured = switches.drop !== undefined || switches.status !== undefined || failuresLeft !== undefined;
    if (!configured) return false;
    if (switches.failEvery !== undefined && ++sinceFailEvery % switches.failEvery !== 0) return false;
    if (failuresLeft === undefined) return true;
    if (failuresLeft <= 0) return false;
    failuresLeft -= 1;
    return true;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const bytes = await readBody(req);
    const raw = bytes.toString("utf8");
    const path = (req.url ?? "/").split("?")[0]!;
    const edit = path === EDITS ? await readEdit(bytes, req.headers["content-type"]) : undefined;
    let body: unknown = edit ? edit.call : raw;
    let parsedOk = edit !== undefined;
    if (!edit) {
      try {
        body = JSON.parse(raw);
        parsedOk = true;
      } catch {
        // recorded as text; answered 400 below
      }
    }
    calls.push({ method: req.method ?? "", path, headers: req.headers, body });
    const vendor: FakeVendor = path === "/v1/messages" ? "anthropic" : "openai";
    if (switches.delayMs) await wait(switches.delayMs);
    // Read after the delay: a test may reconfigure (or reset) while a slow call is in flight.
    const current = switches;
    const failing = takeFailure();
    if (failing && current.drop === "before-response") {
      req.socket.destroy();
      return;
    }
    if (failing && current.drop === undefined) {
      const status = current.status ?? 503;
      if (current.retryAfterS !== undefined && (status === 429 || status === 503)) res.setHeader("retry-after", String(current.retryAfterS));
      sendError(res, vendor, status, current.errorBody ?? fakeVendorError(vendor, status, "the fake upstream was told to fail"));
      return;
    }

    if (req.method !== "POST" || !ROUTES.has(path)) {
      sendError(res, vendor, 404, fakeVendorError(vendor, 404, `no route for ${req.method} ${path}`));
      return;
    }
    if (edit && "error" in edit) {
      sendError(res, vendor, 400, fakeVendorError(vendor, 400, edit.error));
      return;
    }
    if (!parsedOk || typeof body !== "object" || body === null) {
      sendError(res, vendor, 400, fakeVendorError(vendor, 400, "the request body must be a JSON object"));
      return;
    }
    const reply = edit
      ? await editAnswer(edit.call, edit.image, current.imagesAnswer ?? "normal")
      : replyTo(path, body as Record<string, unknown>, current.usage ?? "normal");
    if (typeof reply === "string") {
      sendError(res, vendor, 400, fakeVendorError(vendor, 400, reply));
      return;
    }
    if (failing && current.drop === "mid-body") {
      const payload = Buffer.from(JSON.stringify(reply));
      res.writeHead(200, { "content-type": "application/json", "content-length": payload.length, ...requestIdHeader(vendor) });
      res.write(payload.subarray(0, Math.floor(payload.length / 2)), () => req.socket.destroy());
      return;
    }
    sendJson(res, vendor, 200, reply);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) sendError(res, "openai", 500, fakeVendorError("openai", 500, String(e)));
      else res.destroy();
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  let refusing = false;
  const refuseConnections = async (refuse: boolean): Promise<void> => {
    if (refuse === refusing) return;
    refusing = refuse;
    if (refuse) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    } else {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, "127.0.0.1", () => resolve());
      });
    }
  };

  return {
    url,
    anthropicBaseUrl: url,
    openaiBaseUrl: `${url}/v1`,
    calls,
    callCount: () => calls.length,
    configure(next) {
      switches = { ...switches, ...next };
      if (next.failTimes !== undefined) failuresLeft = next.failTimes;
      if (next.failEvery !== undefined) sinceFailEvery = 0;
    },
    refuseConnections,
    reset() {
      if (refusing) void refuseConnections(false);
      switches = {};
      failuresLeft = undefined;
      calls.length = 0;
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const s of sockets) s.destroy();
      if (!refusing) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const EDITS = "/v1/images/edits";
const ROUTES = new Set(["/v1/messages", "/v1/chat/completions", "/v1/responses", EDITS]);

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function requestIdHeader(vendor: FakeVendor): Record<string, string> {
  return vendor === "anthropic" ? { "request-id": `req_${hex(12)}` } : { "x-request-id": `req_${hex(16)}` };
}

function sendJson(res: ServerResponse, vendor: FakeVendor, status: number, body: unknown): void {
  const payload = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { "content-type": "application/json", "content-length": payload.length, ...requestIdHeader(vendor) });
  res.end(payload);
}

function sendError(res: ServerResponse, vendor: FakeVendor, status: number, body: unknown): void {
  if (status === 429 && !res.hasHeader("retry-after")) res.setHeader("retry-after", "1");
  if (typeof body === "string") {
    res.writeHead(status, { "content-type": "text/plain; charset=utf-8", ...requestIdHeader(vendor) });
    res.end(body);
    return;
  }
  sendJson(res, vendor, status, body);
}

/** The error JSON each vendor really sends. */
export function fakeVendorError(vendor: FakeVendor, status: number, message: string): unknown {
  if (vendor === "anthropic") {
    const type =
      (
        {
          400: "invalid_request_error",
          401: "authentication_error",
          402: "billing_error",
          403: "permission_error",
          404: "not_found_error",
          413: "request_too_large",
          429: "rate_limit_error",
          504: "timeout_error",
          529: "overloaded_error",
        } as Record<number, string>
      )[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
    return { type: "error", error: { type, message }, request_id: `req_${hex(12)}` };
  }
  const [type, code] =
    status === 401
      ? ["invalid_request_error", "invalid_api_key"]
      : status === 429
        ? ["requests", "rate_limit_exceeded"]
        : status >= 500
          ? ["server_error", null]
          : ["invalid_request_error", null];
  return { error: { message, type, param: null, code } };
}

/** The reply for a routed request, or the message of a 400 when the body is not what the vendor accepts. */
function replyTo(path: string, body: Record<string, unknown>, usage: FakeUsageMode): unknown {
  const conversation =
    path === "/v1/messages" ? anthropicConversation(body) : path === "/v1/chat/completions" ? chatConversation(body) : responsesConversation(body);
  if (typeof conversation === "string") return conversation;
  const full = `Fake reply to: ${conversation.lastUserText}`;
  const text = conversation.maxTokens === undefined ? full : truncateToTokens(full, conversation.maxTokens);
  const cut = text.length < full.length;
  const tokens = usageNumbers(usage, conversation.inputText, text, conversation.images);
  if (path === "/v1/messages") return anthropicMessage(conversation, text, cut, tokens);
  if (path === "/v1/chat/completions") return chatCompletion(conversation, text, cut, tokens);
  return responseObject(body, conversation, text, cut, tokens);
}

type Tokens = { input: number; output: number } | undefined;

function usageNumbers(mode: FakeUsageMode, inputText: string, outputText: string, images: number): Tokens {
  switch (mode) {
    case "missing":
      return undefined;
    case "inflated":
      return { input: 1_000_000, output: 1_000_000 };
    case "absurd":
      return { input: Number.MAX_SAFE_INTEGER, output: Number.MAX_SAFE_INTEGER };
    case "negative":
      return { input: -1, output: -10 };
    case "normal":
      return { input: fakeTokens(inputText) + images * FAKE_IMAGE_TOKENS, output: fakeTokens(outputText) };
  }
}

function anthropicMessage(c: Conversation, text: string, cut: boolean, tokens: Tokens): unknown {
  return {
    id: `msg_${hex(12)}`,
    type: "message",
    role: "assistant",
    model: c.model,
    content: [{ type: "text", text }],
    stop_reason: cut ? "max_tokens" : "end_turn",
    stop_sequence: null,
    ...(tokens && {
      usage: {
        input_tokens: tokens.input,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: tokens.output,
        service_tier: "standard",
      },
    }),
  };
}

function chatCompletion(c: Conversation, text: string, cut: boolean, tokens: Tokens): unknown {
  return {
    id: `chatcmpl-${hex(12)}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: c.model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: text, refusal: null, annotations: [] },
        logprobs: null,
        finish_reason: cut ? "length" : "stop",
      },
    ],
    ...(tokens && {
      usage: {
        prompt_tokens: tokens.input,
        completion_tokens: tokens.output,
        total_tokens: tokens.input + tokens.output,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      },
    }),
    service_tier: "default",
    system_fingerprint: "fp_fake",
  };
}

function responseObject(body: Record<string, unknown>, c: Conversation, text: string, cut: boolean, tokens: Tokens): unknown {
  const status = cut ? "incomplete" : "completed";
  return {
    id: `resp_${hex(16)}`,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status,
    background: false,
    error: null,
    incomplete_details: cut ? { reason: "max_output_tokens" } : null,
    instructions: typeof body.instructions === "string" ? body.instructions : null,
    max_output_tokens: c.maxTokens ?? null,
    model: c.model,
    output: [
      {
        id: `msg_${hex(16)}`,
        type: "message",
        status,
        role: "assistant",
        content: [{ type: "output_text", annotations: [], logprobs: [], text }],
      },
    ],
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    service_tier: "default",
    store: true,
    temperature: typeof body.temperature === "number" ? body.temperature : 1,
    text: { format: { type: "text" }, verbosity: "medium" },
    tool_choice: "auto",
    tools: [],
    top_p: 1,
    truncation: "disabled",
    ...(tokens && {
      usage: {
        input_tokens: tokens.input,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: tokens.output,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: tokens.input + tokens.output,
      },
    }),
    user: null,
    metadata: {},
  };
}

type Message = { role: string; text: string; images: FakeImagePart[] };

function anthropicConversation(body: Record<string, unknown>): Conversation | string {
  if (typeof body.model !== "string" || !body.model) return "model: Field required";
  if (!isPositiveInt(body.max_tokens)) return "max_tokens: Field required (a positive integer)";
  const messages = messageList(body.messages, ["user", "assistant"], "messages");
  if (typeof messages === "string") return messages;
  const system = contentOf(body.system, "system");
  if (typeof system === "string") return system;
  return conversation(body.model, messages, system.text, body.max_tokens);
}

function chatConversation(body: Record<string, unknown>): Conversation | string {
  if (typeof body.model !== "string" || !body.model) return "you must provide a model parameter";
  const limit = body.max_completion_tokens ?? body.max_tokens;
  if (limit !== undefined && limit !== null && !isPositiveInt(limit)) return "Invalid 'max_tokens': expected a positive integer";
  const messages = messageList(body.messages, ["system", "developer", "user", "assistant"], "messages");
  if (typeof messages === "string") return messages;
  const system = messages.filter((m) => m.role === "system" || m.role === "developer");
  const rest = messages.filter((m) => m.role !== "system" && m.role !== "developer");
  return conversation(body.model, rest, system.map((m) => m.text).join(""), isPositiveInt(limit) ? limit : undefined);
}

function responsesConversation(body: Record<string, unknown>): Conversation | string {
  if (typeof body.model !== "string" || !body.model) return "Missing required parameter: 'model'.";
  const limit = body.max_output_tokens;
  if (limit !== undefined && limit !== null && (!isPositiveInt(limit) || limit < 16)) {
    return `Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got ${String(limit)} instead.`;
  }
  const instructions = typeof body.instructions === "string" ? body.instructions : "";
  if (typeof body.input === "string") {
    return conversation(body.model, [{ role: "user", text: body.input, images: [] }], instructions, isPositiveInt(limit) ? limit : undefined);
  }
  const messages = messageList(body.input, ["system", "developer", "user", "assistant"], "input");
  if (typeof messages === "string") return messages;
  return conversation(body.model, messages, instructions, isPositiveInt(limit) ? limit : undefined);
}

function conversation(model: string, messages: Message[], system: string, maxTokens: number | undefined): Conversation {
  const lastUser = messages.findLast((m) => m.role === "user");
  return {
    model,
    lastUserText: lastUser ? lastUser.text + describeImages(lastUser.images) : "",
    inputText: system + messages.map((m) => m.text).join(""),
    images: messages.reduce((n, m) => n + m.images.length, 0),
    maxTokens,
  };
}

function messageList(value: unknown, roles: string[], field: string): Message[] | string {
  if (!Array.isArray(value) || value.length === 0) return `${field}: Field required (a non-empty array)`;
  const out: Message[] = [];
  for (const [i, m] of value.entries()) {
    const role = (m as { role?: unknown } | null)?.role;
    if (typeof role !== "string" || !roles.includes(role)) return `${field}.${i}.role: Input should be ${roles.map((r) => `'${r}'`).join(" or ")}`;
    const content = contentOf((m as { content?: unknown }).content, `${field}.${i}.content`);
    if (typeof content === "string") return content;
    out.push({ role, ...content });
  }
  return out;
}

/**
 * A string, or a content array: its text parts (`text`, `input_text`, `output_text`) and its images, in
 * each vendor's shape (Anthropic `image` blocks with a base64 source, OpenAI `image_url` and
 * `input_image` data URLs). An image that is not what it says is the vendor's 400 (its message).
 */
function contentOf(content: unknown, where: string): { text: string; images: FakeImagePart[] } | string {
  if (typeof content === "string") return { text: content, images: [] };
  if (!Array.isArray(content)) return { text: "", images: [] };
  let text = "";
  const images: FakeImagePart[] = [];
  for (const [i, part] of content.entries()) {
    const p = (part ?? {}) as { type?: unknown; text?: unknown; source?: { type?: unknown; media_type?: unknown; data?: unknown }; image_url?: unknown };
    let image: FakeImagePart | string | undefined;
    if (p.type === "image") {
      image =
        p.source?.type === "base64"
          ? readImage(p.source.media_type, p.source.data, `${where}.${i}.source`)
          : `${where}.${i}.source.type: Input should be 'base64'`;
    } else if (p.type === "image_url") {
      image = readDataUrl((p.image_url as { url?: unknown } | undefined)?.url, `${where}.${i}.image_url`);
    } else if (p.type === "input_image") {
      image = readDataUrl(p.image_url, `${where}.${i}.image_url`);
    } else if (typeof p.text === "string") {
      text += p.text;
    }
    if (typeof image === "string") return image;
    if (image) images.push(image);
  }
  return { text, images };
}

function isPositiveInt(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 1;
}

function fakeTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, "utf8") / FAKE_BYTES_PER_TOKEN);
}

/** The longest prefix of whole code points that fits in `maxTokens` tokens. */
function truncateToTokens(text: string, maxTokens: number): string {
  const budget = maxTokens * FAKE_BYTES_PER_TOKEN;
  let bytes = 0;
  let end = 0;
  for (const ch of text) {
    bytes += Buffer.byteLength(ch, "utf8");
    if (bytes > budget) break;
    end += ch.length;
  }
  return text.slice(0, end);
}

function hex(bytes: number): string {
  return randomBytes(bytes).toString("hex");
}
