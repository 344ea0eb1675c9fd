import { readFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import type { JobRecord } from "@meter/contracts";
import { repoRoot } from "@meter/local-infra";
import { eventually, startMediaSystem, type FakeEditCall, type MediaSystem } from "@meter/testing";

/**
 * Media jobs on upstream models (docs/api.md, "Media on upstream models"), end to end through the gateway
 * against the fake upstream speaking the vendors' protocols: an Images API edit on each success and
 * failure path, failover, analysis on each chat protocol, text analysis, and the money after each (the
 * public tariff exactly once, or nothing when the job failed).
 */
jest.setTimeout(120_000);

const PRICE = { edit: 300_000, image: 100_000, character: 20 };
const CREDIT = 1_000_000_000;
const KEY_ENV = "FAKE_UPSTREAM_API_KEY";

let s: MediaSystem;
let base: { anthropic: string; openai: string };

const models = () => ({
  "up-edit": {
    enabled: true,
    provider: { kind: "openai-images", base_url: base.openai, upstream_model: "gpt-image-1", api_key_env: KEY_ENV },
    operations: { image_edit: { unit: "request", price_per_unit_microrub: PRICE.edit } },
  },
  // Two providers on the one fake, told apart by their upstream model: the first refused, the second answers.
  "up-edit-pair": {
    enabled: true,
    providers: [
      { kind: "openai-images", base_url: base.openai, upstream_model: "edit-primary", api_key_env: KEY_ENV, priority: 0 },
      { kind: "openai-images", base_url: base.openai, upstream_model: "edit-secondary", api_key_env: KEY_ENV, priority: 1 },
    ],
    operations: { image_edit: { unit: "request", price_per_unit_microrub: PRICE.edit } },
  },
  "up-vision-anthropic": vision("anthropic", base.anthropic),
  "up-vision-chat": vision("openai-chat", base.openai),
  "up-vision-responses": vision("openai-responses", base.openai),
  "up-text": {
    enabled: true,
    provider: { kind: "openai-chat", base_url: base.openai, upstream_model: "analyst", api_key_env: KEY_ENV },
    operations: { text_analysis: { unit: "character", price_per_unit_microrub: PRICE.character } },
  },
});

function vision(kind: string, baseUrl: string) {
  return {
    enabled: true,
    provider: { kind, base_url: baseUrl, upstream_model: `vision-${kind}`, api_key_env: KEY_ENV },
    operations: { image_analysis: { unit: "image", price_per_unit_microrub: PRICE.image } },
  };
}

beforeAll(async () => {
  s = await startMediaSystem({ MEDIA_JOBS_UPSTREAM_TIMEOUT_MS: "2500", MEDIA_JOBS_UPSTREAM_RETRY_DELAYS_MS: "0", MEDIA_JOBS_STALL_TIMEOUT_MS: "30000" });
  base = { anthropic: s.sut.fake.anthropicBaseUrl, openai: s.sut.fake.openaiBaseUrl };
  for (const [id, model] of Object.entries(models())) await s.sut.admin("PUT", `/admin/v1/models/${id}`, model);
}, 240_000);
afterEach(() => s.sut.fake.reset());
afterAll(async () => {
  if (!s) return;
  await s.sut.assertBooksBalance();
  await s.close();
});

type Account = Awaited<ReturnType<MediaSystem["sut"]["account"]>>;
const errorCode = (res: { json: unknown }) => (res.json as { error?: { code?: string } }).error?.code;
const png = (width = 64, height = 48) =>
  sharp({ create: { width, height, channels: 3, background: { r: 200, g: 40, b: 10 } } })
    .png()
    .toBuffer();
const jpeg = () =>
  sharp({ create: { width: 40, height: 30, channels: 3, background: { r: 10, g: 90, b: 200 } } })
    .jpeg()
    .toBuffer();
const editCalls = () => s.sut.fake.calls.filter((c) => c.path === "/v1/images/edits").map((c) => c.body as FakeEditCall);

/** Submits a job once the API process has the catalog's new models (it reloads every 200 ms here). */
async function submitJob(a: Account, p: string, body: Record<string, unknown>): Promise<JobRecord> {
  let accepted: JobRecord | undefined;
  await eventually(
    async () => {
      const res = await s.submit(a.key, p, body);
      if (res.status === 202) accepted = res.json;
      return res.status === 202;
    },
    10_000,
    `${p} on ${String(body.model)} to be accepted`,
  );
  return accepted!;
}

async function account(): Promise<Account> {
  return s.sut.account({ credit: CREDIT });
}

describe("image edits on an Images API model", () => {
  test("the prompt as written, the image and the settings go upstream; the edited image is the one result, charged the tariff once", async () => {
    const a = await account();
    const input = await png();
    const fileId = await s.upload(a.key, input, "image/png", "photo.png");
    const prompt = "Replace the background with a night sky, keep the subject's colours";
    const job = await submitJob(a, "/v1/images/edits", { model: "up-edit", file_id: fileId, prompt, settings: { output_format: "webp", quality: "low" } });
    expect(job).toMatchObject({ status: "queued", billing: { status: "reserved", estimated_cost_microrub: PRICE.edit } });

    const done = await s.waitForJob(a.key, job.id);
    expect(done).toMatchObject({ status: "succeeded", result: { mime_type: "image/webp" }, billing: { status: "settled", cost_microrub: PRICE.edit } });
    const [call] = editCalls();
    expect(call).toEqual({
      model: "gpt-image-1",
      prompt,
      n: "1",
      image: { filename: "photo.png", type: "image/png", bytes: input.length, sha256: expect.any(String) },
      settings: { output_format: "webp", quality: "low" },
    });
    // The fake inverts the image: the result is its answer (lossy WebP: within a few levels), not the input.
    const result = await sharp(await s.download(a.key, done.result!.file_id))
      .raw()
      .toBuffer({ resolveWithObject: true });
    [55, 215, 245].forEach((level, i) => expect(Math.abs(result.data[i]! - level)).toBeLessThanOrEqual(8));
    expect(s.sut.fake.calls[0]!.headers.authorization).toBe("Bearer sk-fake-upstream");
    expect((await s.settledBalance(a.organizationId)).balance_microrub).toBe(CREDIT - PRICE.edit);

    // The job is in the key's request log like a text request, charged the tariff.
    let entries: { endpoint: string; model: string; outcome: string; cost_microrub: number; usage: unknown }[] = [];
    await eventually(
      async () => (entries = (await s.call<{ data: typeof entries }>(a.key, "GET", "/v1/usage/requests")).json.data).length === 1,
      10_000,
      "the edit's request log entry",
    );
    expect(entries[0]).toMatchObject({
      endpoint: "/v1/images/edits",
      model: "up-edit",
      outcome: "succeeded",
      cost_microrub: PRICE.edit,
      usage: { unit: "request", quantity: 1 },
    });
    // The upstream's tokens are the operator's to see (our cost of the request), not the customer's.
    expect(entries[0]).not.toHaveProperty("upstream_usage");
    const operators = await s.sut.admin<{ data: { upstream_usage: unknown }[] }>("GET", `/admin/v1/organizations/${a.organizationId}/requests`);
    expect(operators.data[0]!.upstream_usage).toEqual({ input_tokens: expect.any(Number), output_tokens: 1056 });

    // The upstream's tokens are kept with the job too.
    const { rows } = await s.db.query<{ upstream_usage: string; provider: string | null }>("SELECT upstream_usage, provider FROM media_jobs WHERE id = $1", [
      job.id,
    ]);
    expect(JSON.parse(rows[0]!.upstream_usage)).toEqual({ input_tokens: expect.any(Number), output_tokens: 1056 });
  });

  test("GET /v1/models shows what the model takes: its file types, limits and settings", async () => {
    const a = await account();
    const res = await s.call<{ data: { id: string; operations: Record<string, { capabilities?: Record<string, unknown> }> }[] }>(a.key, "GET", "/v1/models");
    const edit = res.json.data.find((m) => m.id === "up-edit")!;
    expect(edit.operations.image_edit!.capabilities).toMatchObject({
      accepted_mime_types: ["image/png", "image/jpeg", "image/webp"],
      limits: { max_files: 1, max_prompt_characters: 32_000 },
      settings: { properties: { size: expect.any(Object), quality: expect.any(Object), background: expect.any(Object), output_format: expect.any(Object) } },
    });
  });

  test("a setting the model does not take, a prompt over 32,000 characters or none: refused before anything is reserved", async () => {
    const a = await account();
    const fileId = await s.upload(a.key, await png(), "image/png");
    const warm = await submitJob(a, "/v1/images/edits", { model: "up-edit", file_id: fileId, prompt: "warm up the catalog" });
    await s.waitForJob(a.key, warm.id);
    const cases: [Record<string, unknown>, number, string][] = [
      [{ prompt: "x", settings: { strength: 0.5 } }, 400, "unsupported_parameter"],
      [{ prompt: "x", settings: { size: "4096x4096" } }, 400, "unsupported_parameter"],
      [{ prompt: "y".repeat(32_001) }, 400, "invalid_request"],
      [{}, 400, "invalid_request"],
    ];
    for (const [body, status, code] of cases) {
      const res = await s.submit(a.key, "/v1/images/edits", { model: "up-edit", file_id: fileId, ...body });
      expect([res.status, errorCode(res)]).toEqual([status, code]);
    }
    expect(editCalls()).toHaveLength(1);
    expect((await s.settledBalance(a.organizationId)).balance_microrub).toBe(CREDIT - PRICE.edit);
  });

  test.each([
    ["a URL instead of b64_json (never fetched)", "url" as const],
    ["b64_json that is no image", "not_an_image" as const],
    ["no image at all", "no_data" as const],
  ])("an answer with %s: the job fails upstream_error, nothing is charged", async (_what, answer) => {
    const a = await account();
    const fileId = await s.upload(a.key, await png(), "image/png");
    s.sut.fake.configure({ imagesAnswer: answer });
    const job = await submitJob(a, "/v1/images/edits", { model: "up-edit", file_id: fileId, prompt: "sharpen it" });
    const done = await s.waitForJob(a.key, job.id);
    expect(done).toMatchObject({ status: "failed", error: { code: "upstream_error" }, billing: { status: "released", cost_microrub: 0 } });
    // It ran upstream (we may have paid): it is never sent anywhere else.
    expect(editCalls()).toHaveLength(1);
    expect((await s.settledBalance(a.organizationId)).balance_microrub).toBe(CREDIT);
  });

  test("an upstream refusing every call: the job fails upstream_error after the inline retry, nothing is charged", async () => {
    const a = await account();
    const fileId = await s.upload(a.key, await png(), "image/png");
    s.sut.fake.configure({ status: 500 });
    const done = await s.waitForJob(a.key, (await submitJob(a, "/v1/images/edits", { model: "up-edit", file_id: fileId, prompt: "crop it" })).id);
    expect(done).toMatchObject({ status: "failed", error: { code: "upstream_error", message: expect.stringContaining("the upstream answered 500") } });
    expect(editCalls()).toHaveLength(2);
    expect((await s.settledBalance(a.organizationId)).balance_microrub).toBe(CREDIT);
  });

  test("no answer in time: upstream_timeout, the upstream may have run it, never sent to another provider, nothing charged", async () => {
    const a = await account();
    const fileId = await s.upload(a.key, await png(), "image/png");
    s.sut.fake.configure({ delayMs: 6_000 });
    const done = await s.waitForJob(a.key, (await submitJob(a, "/v1/images/edits", { model: "up-edit-pair", file_id: fileId, prompt: "blur it" })).id);
    expect(done).toMatchObject({ status: "failed", error: { code: "upstream_timeout", message: expect.stringContaining("may have run it") } });
    expect(editCalls().map((c) => c.model)).toEqual(["edit-primary"]);
    expect((await s.settledBalance(a.organizationId)).balance_microrub).toBe(CREDIT);
    // The request log says so too: the entry's reason.
    let entries: { outcome: string; error: { code: string; message: string } | null }[] = [];
    await eventually(
      async () => (entries = (await s.call<{ data: typeof entries }>(a.key, "GET", "/v1/usage/requests")).json.data).length === 1,
      10_000,
      "the entry",
    );
    expect(entries[0]).toMatchObject({ outcome: "failed", error: { code: "upstream_timeout", message: expect.stringContaining("may have run it") } });
  });

  test("the connection lost after the request was sent: failed upstream_error, never tried on the other provider", async () => {
    const a = await account();
    const fileId = await s.upload(a.key, await png(), "image/png");
    s.sut.fake.configure({ drop: "before-response" });
    const done = await s.waitForJob(a.key, (await submitJob(a, "/v1/images/edits", { model: "up-edit-pair", file_id: fileId, prompt: "blur it" })).id);
    expect(done).toMatchObject({ status: "failed", error: { code: "upstream_error", message: expect.stringContaining("may have run it") } });
    expect(editCalls().map((c) => c.model)).toEqual(["edit-primary"]);
    expect((await s.settledBalance(a.organizationId)).balance_microrub).toBe(CREDIT);
  });

  test("failover: the first provider refuses (nothing ran), the next one edits; the customer pays the public tariff once", async () => {
    const a = await account();
    const fileId = await s.upload(a.key, await png(), "image/png");
    s.sut.fake.configure({ status: 503, failTimes: 1 });
    const done = await s.waitForJob(a.key, (await submitJob(a, "/v1/images/edits", { model: "up-edit-pair", file_id: fileId, prompt: "rotate it" })).id);
    expect(done).toMatchObject({ status: "succeeded", billing: { status: "settled", cost_microrub: PRICE.edit } });
    expect(editCalls().map((c) => c.model)).toEqual(["edit-primary", "edit-secondary"]);
    expect((await s.settledBalance(a.organizationId)).balance_microrub).toBe(CREDIT - PRICE.edit);
  });
});

describe("image analysis on the chat protocols", () => {
  test.each([
    ["anthropic", "up-vision-anthropic", "/v1/messages"],
    ["openai-chat", "up-vision-chat", "/v1/chat/completions"],
    ["openai-responses", "up-vision-responses", "/v1/responses"],
  ])("%s: each image a base64 block of that protocol, one result per image, charged per image", async (kind, model, upstreamPath) => {
    const a = await account();
    const first = await s.upload(a.key, await png(), "image/png");
    const second = await s.upload(a.key, await jpeg(), "image/jpeg");
    const job = await submitJob(a, "/v1/images/analysis", { model, file_ids: [first, second], settings: { prompt: "What colour is it?" } });
    expect(job.billing.estimated_cost_microrub).toBe(2 * PRICE.image);
    const done = await s.waitForJob(a.key, job.id);
    expect(done).toMatchObject({ status: "succeeded", result: { mime_type: "application/json" }, billing: { cost_microrub: 2 * PRICE.image } });

    const document = JSON.parse((await s.download(a.key, done.result!.file_id)).toString("utf8")) as { object: string; model: string; results: unknown[] };
    expect(document).toEqual({
      object: "analysis",
      model,
      results: [
        { file_id: first, text: expect.stringMatching(/^Fake reply to: What colour is it\? \[image 1: image\/png, \d+ bytes\]$/) },
        { file_id: second, text: expect.stringMatching(/^Fake reply to: What colour is it\? \[image 1: image\/jpeg, \d+ bytes\]$/) },
      ],
    });
    const calls = s.sut.fake.calls.filter((c) => c.path === upstreamPath);
    expect(calls).toHaveLength(2);
    const sent = JSON.stringify(calls[0]!.body);
    const shape = {
      anthropic: '"type":"image","source":{"type":"base64","media_type":"image/png"',
      "openai-chat": '"image_url":{"url":"data:image/png;base64,',
      "openai-responses": '"type":"input_image","image_url":"data:image/png;base64,',
    }[kind]!;
    expect(sent).toContain(shape);
    expect((await s.settledBalance(a.organizationId)).balance_microrub).toBe(CREDIT - 2 * PRICE.image);
  });

  test("a PDF's pages each go as an image, scaled to the documented bound; a page each in the result", async () => {
    const a = await account();
    const pdf = readFileSync(path.join(repoRoot(), "packages/media-engines/test/fixtures/scanned.pdf"));
    const fileId = await s.upload(a.key, pdf, "application/pdf", "scan.pdf");
    const job = await submitJob(a, "/v1/images/analysis", { model: "up-vision-chat", file_id: fileId });
    expect(job.billing.estimated_cost_microrub).toBe(2 * PRICE.image);
    const done = await s.waitForJob(a.key, job.id);
    const document = JSON.parse((await s.download(a.key, done.result!.file_id)).toString("utf8")) as { results: { page: number; text: string }[] };
    expect(document.results.map((r) => r.page)).toEqual([1, 2]);
    expect(document.results[0]!.text).toMatch(/^Fake reply to: Describe this image.*\[image 1: image\/png, \d+ bytes\]$/);
    const url = (s.sut.fake.calls[0]!.body as { messages: { content: { image_url?: { url: string } }[] }[] }).messages[0]!.content[0]!.image_url!.url;
    const sentImage = await sharp(Buffer.from(url.split(",")[1]!, "base64")).metadata();
    expect(Math.max(sentImage.width, sentImage.height)).toBeLessThanOrEqual(1568);
    expect((await s.settledBalance(a.organizationId)).balance_microrub).toBe(CREDIT - 2 * PRICE.image);
  });

  test("the upstream failing on the second image: the job fails, nothing is charged (not even the first image)", async () => {
    const a = await account();
    const files = [await s.upload(a.key, await png(), "image/png"), await s.upload(a.key, await png(32, 32), "image/png")];
    s.sut.fake.configure({ status: 400, failEvery: 2 });
    const done = await s.waitForJob(a.key, (await submitJob(a, "/v1/images/analysis", { model: "up-vision-anthropic", file_ids: files })).id);
    expect(done).toMatchObject({ status: "failed", error: { code: "upstream_error" }, billing: { status: "released", cost_microrub: 0 } });
    expect((await s.settledBalance(a.organizationId)).balance_microrub).toBe(CREDIT);
  });
});

describe("text analysis on a chat model", () => {
  test("settings.instructions go as the system text, the input as the message; charged per character of the input", async () => {
    const a = await account();
    const input = "Meter opened an office in Berlin.";
    const job = await submitJob(a, "/v1/text/analysis", { model: "up-text", input, settings: { instructions: "Name the places." } });
    expect(job.billing.estimated_cost_microrub).toBe(input.length * PRICE.character);
    const done = await s.waitForJob(a.key, job.id);
    const document = JSON.parse((await s.download(a.key, done.result!.file_id)).toString("utf8")) as unknown;
    expect(document).toEqual({ object: "analysis", model: "up-text", results: [{ text: `Fake reply to: ${input}` }] });
    const body = s.sut.fake.calls.find((c) => c.path === "/v1/chat/completions")!.body as { messages: { role: string; content: string }[] };
    expect(body.messages).toEqual([
      { role: "system", content: "Name the places." },
      { role: "user", content: input },
    ]);
    expect((await s.settledBalance(a.organizationId)).balance_microrub).toBe(CREDIT - input.length * PRICE.character);
  });

  test("an upstream key this service may not read: 503 model_unavailable before anything is reserved", async () => {
    await s.sut.admin("PUT", "/admin/v1/models/up-text-nokey", {
      enabled: true,
      provider: { kind: "openai-chat", base_url: base.openai, api_key_env: "NOT_CONFIGURED_API_KEY" },
      operations: { text_analysis: { unit: "character", price_per_unit_microrub: 1 } },
    });
    const a = await account();
    await eventually(
      async () => {
        const res = await s.submit(a.key, "/v1/text/analysis", { model: "up-text-nokey", input: "hi" });
        return res.status === 503 && errorCode(res) === "model_unavailable";
      },
      10_000,
      "the unconfigured model to be refused",
    );
    expect(s.sut.fake.calls).toEqual([]);
  });
});

describe("the catalog", () => {
  test("refuses a provider kind that cannot serve an operation, naming the kinds that can", async () => {
    const res = await fetch(`${s.sut.url}/admin/v1/models/bad-kind`, {
      method: "PUT",
      headers: { authorization: `Bearer ${s.sut.adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({
        enabled: true,
        provider: { kind: "anthropic", base_url: base.anthropic },
        operations: { image_edit: { unit: "request", price_per_unit_microrub: 1 } },
      }),
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain("provider kind anthropic cannot serve image_edit; kinds that can: openai-images, local");
  });
});
