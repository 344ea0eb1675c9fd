/** @jest-environment ./packages/media-engines/test/support/native-esm.environment.mjs */
import { randomUUID } from "node:crypto";
import sharp from "sharp";
import type { JobList, JobRecord, MediaQuote } from "@meter/contracts";
import { verifyGrant } from "@meter/service-kit";
import { characterErrorRate } from "@meter/media-engines/test/support/cer";
import { fixture } from "@meter/media-engines/test/support/fixtures";
import { portraitJpeg } from "@meter/media-engines/test/support/generated-inputs";
import { renderTextGrey } from "@meter/media-engines/test/support/text-render";
import {
  ANALYSIS_MODEL,
  DETECTION_MODEL,
  EDIT_MODEL,
  OCR_MODEL,
  TEXT_MODEL,
  eventually,
  signedCall,
  testGrantKeys,
  startMediaSystem,
  type HttpAnswer,
  type MediaSystem,
} from "@meter/testing";
import { slowOcrJob } from "./support/slow-job";

/**
 * Every operation end to end through the gateway, as a client does it: the files flow (create, PUT to
 * the upload link, complete), the job, its polling, the result file's download, and the books after.
 * One worker running one job at a time, so a job can be held in the queue behind a long one.
 */
jest.setTimeout(120_000);

const PRICE = { ocr: 200_000, edit: 300_000, analysis: 100_000, detection: 400_000, character: 20 };
const CREDIT = 1_000_000_000;

let s: MediaSystem;
beforeAll(async () => {
  s = await startMediaSystem({ MEDIA_JOBS_CONCURRENCY: "1" });
}, 240_000);
afterAll(async () => {
  if (!s) return;
  await s.sut.assertBooksBalance();
  await s.close();
});

type Account = Awaited<ReturnType<MediaSystem["sut"]["account"]>>;
const upload = (a: Account, name: Parameters<typeof fixture>[0]) => {
  const { file } = fixture(name);
  return s.upload(a.key, file.data, file.mimeType, name);
};
const errorCode = (res: { json: unknown }) => (res.json as { error?: { code?: string } }).error?.code;

describe("OCR", () => {
  test("a PNG with English text: the text in a downloadable result file, billed one page at the catalog tariff", async () => {
    const a = await s.sut.account();
    const fileId = await upload(a, "english.png");
    const accepted = await s.submit(a.key, "/v1/ocr", { model: OCR_MODEL, file_id: fileId });
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get("location")).toBe(`/v1/jobs/${accepted.json.id}`);
    expect(accepted.json).toMatchObject({
      object: "job",
      operation: "ocr",
      model: OCR_MODEL,
      status: "queued",
      result: null,
      error: null,
      billing: { status: "reserved", estimated_cost_microrub: PRICE.ocr, cost_microrub: null },
      usage: { unit: "page", quantity: 1 },
      progress: { done: 0, total: 1, unit: "page" },
      file_ids: [fileId],
    });

    const job = await s.waitForJob(a.key, accepted.json.id);
    expect(job).toMatchObject({ status: "succeeded", billing: { status: "settled", estimated_cost_microrub: PRICE.ocr, cost_microrub: PRICE.ocr } });
    expect(job.result).toMatchObject({ mime_type: "application/json" });
    expect(Date.parse(job.started_at!)).toBeGreaterThanOrEqual(Date.parse(job.created_at));
    expect(Date.parse(job.completed_at!)).toBeGreaterThanOrEqual(Date.parse(job.started_at!));
    const resultFile = await s.call<{ expires_at: string; status: string }>(a.key, "GET", `/v1/files/${job.result!.file_id}`);
    expect(resultFile.json.expires_at).toBe(job.expires_at);

    const document = JSON.parse((await s.download(a.key, job.result!.file_id)).toString("utf8")) as { text: string; page_count: number };
    expect(document.page_count).toBe(1);
    expect(characterErrorRate(document.text, fixture("english.png").expected.pages![0]!)).toBeLessThan(0.02);
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: CREDIT - PRICE.ocr });
  });

  test("Russian text, with the language given in settings", async () => {
    const a = await s.sut.account();
    const accepted = await s.submit(a.key, "/v1/ocr", { model: OCR_MODEL, file_id: await upload(a, "russian.png"), settings: { language: "ru" } });
    const job = await s.waitForJob(a.key, accepted.json.id);
    expect(job.status).toBe("succeeded");
    const document = JSON.parse((await s.download(a.key, job.result!.file_id)).toString("utf8")) as { text: string; language: string };
    expect(document.language).toBe("ru");
    expect(characterErrorRate(document.text, fixture("russian.png").expected.pages![0]!)).toBeLessThan(0.03);
  });

  test("a two-page PDF with a text layer is quoted and billed two pages, each read from its layer", async () => {
    const a = await s.sut.account();
    const fileId = await upload(a, "text-layer.pdf");
    const quote = await s.call<MediaQuote>(a.key, "POST", "/v1/quotes", { model: OCR_MODEL, operation: "ocr", file_id: fileId });
    expect(quote.status).toBe(200);
    expect(quote.json).toMatchObject({
      object: "quote",
      unit: "page",
      quantity: 2,
      price_per_unit_microrub: PRICE.ocr,
      estimated_cost_microrub: 2 * PRICE.ocr,
      valid_for_s: 30,
    });
    expect(Date.parse(quote.json.expires_at) - Date.now()).toBeGreaterThan(20_000);

    const accepted = await s.submit(a.key, "/v1/ocr", { model: OCR_MODEL, file_ids: [fileId], max_cost_microrub: quote.json.estimated_cost_microrub });
    expect(accepted.json.billing.estimated_cost_microrub).toBe(quote.json.estimated_cost_microrub);
    const job = await s.waitForJob(a.key, accepted.json.id);
    expect(job).toMatchObject({ status: "succeeded", usage: { unit: "page", quantity: 2 }, billing: { cost_microrub: 2 * PRICE.ocr } });
    const document = JSON.parse((await s.download(a.key, job.result!.file_id)).toString("utf8")) as { pages: { source: string; text: string }[] };
    expect(document.pages.map((p) => p.source)).toEqual(["text_layer", "text_layer"]);
    expect(document.pages.map((p) => p.text)).toEqual(fixture("text-layer.pdf").expected.pages);
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: CREDIT - 2 * PRICE.ocr });
  });

  test("a two-page TIFF (a type the model lists) uploads, is billed two pages and read page by page", async () => {
    const a = await s.sut.account();
    const first = await renderTextGrey({ lines: ["The first page of the TIFF"], width: 1200, fontSize: 40 });
    const second = await renderTextGrey({ lines: ["Second page here"], width: 1200, height: first.height, fontSize: 40 });
    const tiff = await sharp(Buffer.concat([first.data, second.data]), {
      raw: { width: 1200, height: first.height * 2, channels: 1, pageHeight: first.height },
    })
      .tiff()
      .toBuffer();
    const fileId = await s.upload(a.key, tiff, "image/tiff", "two-pages.tif");
    const accepted = await s.submit(a.key, "/v1/ocr", { model: OCR_MODEL, file_id: fileId, settings: { language: "en" } });
    expect(accepted.json).toMatchObject({ status: "queued", usage: { unit: "page", quantity: 2 } });
    const job = await s.waitForJob(a.key, accepted.json.id);
    expect(job).toMatchObject({ status: "succeeded", billing: { cost_microrub: 2 * PRICE.ocr } });
    const document = JSON.parse((await s.download(a.key, job.result!.file_id)).toString("utf8")) as { pages: { page: number; text: string }[] };
    expect(document.pages.map((p) => [p.page, p.text])).toEqual([
      [1, "The first page of the TIFF"],
      [2, "Second page here"],
    ]);
  });

  test("an image-only PDF is rendered and recognised page by page", async () => {
    const a = await s.sut.account();
    const accepted = await s.submit(a.key, "/v1/ocr", { model: OCR_MODEL, file_id: await upload(a, "scanned.pdf") });
    const job = await s.waitForJob(a.key, accepted.json.id);
    expect(job).toMatchObject({ status: "succeeded", usage: { quantity: 2 }, progress: { done: 2, total: 2, unit: "page" } });
    const document = JSON.parse((await s.download(a.key, job.result!.file_id)).toString("utf8")) as { pages: { source: string; text: string }[] };
    expect(document.pages.map((p) => p.source)).toEqual(["ocr", "ocr"]);
    document.pages.forEach((page, i) => expect(characterErrorRate(page.text, fixture("scanned.pdf").expected.pages![i]!)).toBeLessThan(0.03));
  });

  test("a PDF whose pages cannot be counted is 422 cost_unknown, for the quote and the job, and nothing is reserved", async () => {
    const a = await s.sut.account();
    const fileId = await s.upload(a.key, Buffer.from("%PDF-1.7\n1 0 obj << /Type /Catalog >> broken beyond repair\n"), "application/pdf", "broken.pdf");
    const quote = await s.call(a.key, "POST", "/v1/quotes", { model: OCR_MODEL, operation: "ocr", file_id: fileId });
    expect([quote.status, errorCode(quote)]).toEqual([422, "cost_unknown"]);
    const job = await s.submit(a.key, "/v1/ocr", { model: OCR_MODEL, file_id: fileId });
    expect([job.status, errorCode(job)]).toEqual([422, "cost_unknown"]);
    expect(await s.sut.admin("GET", `/admin/v1/organizations/${a.organizationId}/balance`)).toMatchObject({ reserved_microrub: 0, available_microrub: CREDIT });
    expect((await s.call<JobList>(a.key, "GET", "/v1/jobs")).json.data).toEqual([]);
  });
});

describe("image editing and analysis", () => {
  test("a rotated image has swapped dimensions; the parsed plan is on the job; one request is billed", async () => {
    const a = await s.sut.account();
    const { file } = fixture("english.png");
    const before = await sharp(file.data).metadata();
    const accepted = await s.submit(a.key, "/v1/images/edits", {
      model: EDIT_MODEL,
      file_id: await upload(a, "english.png"),
      prompt: "rotate 90 degrees, then convert to jpeg",
    });
    expect(accepted.status).toBe(202);
    expect(accepted.json.plan).toEqual({ version: "v1", steps: [{ op: "rotate", degrees: 90 }], format: "jpeg" });
    const job = await s.waitForJob(a.key, accepted.json.id);
    expect(job).toMatchObject({
      status: "succeeded",
      result: { mime_type: "image/jpeg" },
      usage: { unit: "request", quantity: 1 },
      billing: { cost_microrub: PRICE.edit },
    });
    const after = await sharp(await s.download(a.key, job.result!.file_id)).metadata();
    expect([after.format, after.width, after.height]).toEqual(["jpeg", before.height, before.width]);
  });

  test("a job's result downloads with the job's own scope: an images-only key its edit, a text-only key its OCR; not the other way", async () => {
    const a = await s.sut.account();
    const keyWith = async (scopes: string[]) =>
      (
        await s.sut.admin<{ key: string }>("POST", "/admin/v1/keys", {
          user_id: a.userId,
          organization_id: a.organizationId,
          scopes,
          daily_budget_microrub: CREDIT,
        })
      ).key;
    const imagesOnly = await keyWith(["images"]);
    const textOnly = await keyWith(["text"]);
    const input = await upload(a, "english.png");
    const content = (key: string, fileId: string) => fetch(`${s.sut.url}/v1/files/${fileId}/content`, { headers: { authorization: `Bearer ${key}` } });

    const edit = await s.submit(imagesOnly, "/v1/images/edits", { model: EDIT_MODEL, file_id: input, prompt: "rotate 90 degrees" });
    expect(edit.status).toBe(202);
    const edited = (await s.waitForJob(imagesOnly, edit.json.id)).result!.file_id;
    expect(await sharp(await s.download(imagesOnly, edited)).metadata()).toMatchObject({ width: expect.any(Number) });
    const ocr = await s.submit(textOnly, "/v1/ocr", { model: OCR_MODEL, file_id: input });
    expect(ocr.status).toBe(202);
    const recognised = (await s.waitForJob(textOnly, ocr.json.id)).result!.file_id;
    expect((await content(textOnly, recognised)).status).toBe(200);

    for (const [key, fileId] of [
      [textOnly, edited],
      [imagesOnly, recognised],
      [imagesOnly, input],
    ] as const) {
      const refused = await content(key, fileId);
      expect([refused.status, ((await refused.json()) as { error: { code: string } }).error.code]).toEqual([403, "insufficient_scope"]);
    }
    // Another user's result stays out of sight whatever the key holds.
    const other = await s.sut.account({ scopes: ["images"] });
    expect((await content(other.key, edited)).status).toBe(404);
  });

  test("an edit is quoted at its fixed price per request, without a file", async () => {
    const a = await s.sut.account();
    const quote = await s.call<MediaQuote>(a.key, "POST", "/v1/quotes", { model: EDIT_MODEL, operation: "image_edit", prompt: "grayscale" });
    expect(quote.json).toMatchObject({ unit: "request", quantity: 1, estimated_cost_microrub: PRICE.edit });
  });

  test("image analysis reports each image's facts, billed per image", async () => {
    const a = await s.sut.account();
    const ids = [await upload(a, "english.png"), await upload(a, "exif.jpg")];
    const accepted = await s.submit(a.key, "/v1/images/analysis", { model: ANALYSIS_MODEL, file_ids: ids });
    expect(accepted.json.usage).toEqual({ unit: "image", quantity: 2 });
    const job = await s.waitForJob(a.key, accepted.json.id);
    expect(job).toMatchObject({ status: "succeeded", billing: { cost_microrub: 2 * PRICE.analysis } });
    const document = JSON.parse((await s.download(a.key, job.result!.file_id)).toString("utf8")) as {
      images: { format: string; width: number; height: number; exif: Record<string, unknown> | null }[];
    };
    expect(document.images[0]).toMatchObject({ format: "png" });
    expect(document.images[1]).toMatchObject({ format: "jpeg", width: 480, height: 640, exif: { Make: "Meter", Model: "Fixture Camera 1" } });
  });

  test("faces and objects, the second analysis model: a portrait's face and person, billed at that model's own tariff", async () => {
    const a = await s.sut.account();
    const id = await s.upload(a.key, await portraitJpeg(), "image/jpeg", "portrait.jpg");
    const accepted = await s.submit(a.key, "/v1/images/analysis", { model: DETECTION_MODEL, file_ids: [id], settings: { min_confidence: 0.5 } });
    expect(accepted.status).toBe(202);
    expect(accepted.json.usage).toEqual({ unit: "image", quantity: 1 });
    const job = await s.waitForJob(a.key, accepted.json.id);
    expect(job).toMatchObject({ status: "succeeded", billing: { cost_microrub: PRICE.detection } });
    const document = JSON.parse((await s.download(a.key, job.result!.file_id)).toString("utf8")) as {
      min_confidence: number;
      images: { width: number; height: number; face_count: number; object_counts: Record<string, number> }[];
    };
    expect(document.min_confidence).toBe(0.5);
    expect(document.images).toEqual([expect.objectContaining({ width: 290, height: 300, face_count: 1, object_counts: { person: 1 } })]);
  });

  test("an instruction outside the grammar is 400 unsupported_parameter, listing what is supported; nothing is reserved", async () => {
    const a = await s.sut.account();
    const res = await s.submit(a.key, "/v1/images/edits", {
      model: EDIT_MODEL,
      file_id: await upload(a, "english.png"),
      prompt: "make it look like a van Gogh",
    });
    expect([res.status, errorCode(res)]).toEqual([400, "unsupported_parameter"]);
    expect(JSON.stringify(res.json)).toContain("rotate");
    expect(await s.sut.admin("GET", `/admin/v1/organizations/${a.organizationId}/balance`)).toMatchObject({ reserved_microrub: 0 });
  });

  test("a file of a type the model does not take is 415; more files than it takes is 413", async () => {
    const a = await s.sut.account();
    const pdf = await upload(a, "text-layer.pdf");
    const wrongType = await s.submit(a.key, "/v1/images/edits", { model: EDIT_MODEL, file_id: pdf, prompt: "rotate 90" });
    expect([wrongType.status, errorCode(wrongType)]).toEqual([415, "unsupported_media_type"]);
    const tooMany = await s.submit(a.key, "/v1/ocr", { model: OCR_MODEL, file_ids: Array.from({ length: 21 }, () => pdf) });
    expect([tooMany.status, errorCode(tooMany)]).toEqual([413, "payload_too_large"]);
  });

  test("a job that fails while running releases its hold: nothing is charged", async () => {
    const a = await s.sut.account();
    const accepted = await s.submit(a.key, "/v1/images/edits", {
      model: EDIT_MODEL,
      file_id: await upload(a, "english.png"),
      prompt: "crop 100x100 at 5000,5000",
    });
    expect(accepted.status).toBe(202);
    const job = await s.waitForJob(a.key, accepted.json.id);
    expect(job).toMatchObject({ status: "failed", result: null, error: { code: "invalid_input" }, billing: { status: "released", cost_microrub: 0 } });
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: CREDIT, available_microrub: CREDIT });
  });
});

describe("text analysis", () => {
  const input = "The quick brown fox jumps over the lazy dog. Meter Labs opened an office in Berlin last March, and customers love it.";

  test("billed per character of the input, running the tasks asked for", async () => {
    const a = await s.sut.account();
    const quote = await s.call<MediaQuote>(a.key, "POST", "/v1/quotes", { model: TEXT_MODEL, operation: "text_analysis", input });
    expect(quote.json).toMatchObject({ unit: "character", quantity: input.length, estimated_cost_microrub: input.length * PRICE.character });
    const accepted = await s.submit(a.key, "/v1/text/analysis", { model: TEXT_MODEL, input, settings: { tasks: ["language", "statistics"] } });
    expect(accepted.json.billing.estimated_cost_microrub).toBe(quote.json.estimated_cost_microrub);
    const job = await s.waitForJob(a.key, accepted.json.id);
    expect(job).toMatchObject({
      status: "succeeded",
      billing: { cost_microrub: input.length * PRICE.character },
      progress: { done: 2, total: 2, unit: "task" },
    });
    const document = JSON.parse((await s.download(a.key, job.result!.file_id)).toString("utf8")) as Record<string, unknown>;
    expect(document).toMatchObject({ object: "text_analysis_result", tasks: ["language", "statistics"], language: { language: "en" } });
    expect(document.sentiment).toBeUndefined();
  });

  test("a setting the model does not declare is 400 unsupported_parameter", async () => {
    const a = await s.sut.account();
    const res = await s.submit(a.key, "/v1/text/analysis", { model: TEXT_MODEL, input, settings: { temperature: 0.2 } });
    expect([res.status, errorCode(res)]).toEqual([400, "unsupported_parameter"]);
    expect(JSON.stringify(res.json)).toContain("temperature");
  });

  test("max_cost_microrub below the estimate is 422 max_cost_exceeded; at the quoted estimate the job is accepted", async () => {
    const a = await s.sut.account();
    const estimate = input.length * PRICE.character;
    const refused = await s.submit(a.key, "/v1/text/analysis", { model: TEXT_MODEL, input, max_cost_microrub: estimate - 1 });
    expect([refused.status, errorCode(refused)]).toEqual([422, "max_cost_exceeded"]);
    const accepted = await s.submit(a.key, "/v1/text/analysis", { model: TEXT_MODEL, input, max_cost_microrub: estimate });
    expect(accepted.status).toBe(202);
    await s.waitForJob(a.key, accepted.json.id);
  });
});

describe("quotes", () => {
  test("image generation is quoted from its tariff; a model without the operation's tariff is 422 cost_unknown", async () => {
    await s.sut.admin("PUT", "/admin/v1/models/test-image-generation", {
      enabled: true,
      provider: { kind: "local" },
      operations: { image_generation: { unit: "image", price_per_unit_microrub: 750_000 } },
    });
    const a = await s.sut.account();
    let quote: HttpAnswer<MediaQuote> | undefined;
    const body = { model: "test-image-generation", operation: "image_generation", prompt: "a red fox" };
    await eventually(async () => (quote = await s.call<MediaQuote>(a.key, "POST", "/v1/quotes", body)).status === 200, 10_000, "the new model");
    expect(quote!.json).toMatchObject({ operation: "image_generation", unit: "image", quantity: 1, estimated_cost_microrub: 750_000 });
    const noTariff = await s.call(a.key, "POST", "/v1/quotes", { model: TEXT_MODEL, operation: "ocr", file_id: randomUUID() });
    expect([noTariff.status, errorCode(noTariff)]).toEqual([422, "cost_unknown"]);
    const unknown = await s.call(a.key, "POST", "/v1/quotes", { model: "no-such-model", operation: "ocr" });
    expect([unknown.status, errorCode(unknown)]).toEqual([404, "model_not_found"]);
  });
});

describe("the catalog", () => {
  test("GET /v1/models shows each built-in media model's operation with its tariff, settings and limits", async () => {
    const a = await s.sut.account();
    const models = await s.call<{ data: { id: string; operations: Record<string, Record<string, unknown>> }[] }>(a.key, "GET", "/v1/models");
    const ocr = models.json.data.find((m) => m.id === OCR_MODEL)?.operations.ocr;
    expect(ocr).toMatchObject({
      unit: "page",
      price_per_unit_microrub: PRICE.ocr,
      capabilities: {
        settings: { properties: { language: { enum: ["auto", "en", "ru", "eng", "rus"] } } },
        limits: { max_files: 20, max_pages_per_document: 200 },
      },
    });
    const edit = models.json.data.find((m) => m.id === EDIT_MODEL)?.operations.image_edit;
    expect(edit).toMatchObject({ unit: "request", capabilities: { instructions: expect.arrayContaining([expect.stringContaining("rotate")]) } });
    for (const id of [ANALYSIS_MODEL, TEXT_MODEL]) expect(models.json.data.map((m) => m.id)).toContain(id);
  });

  test("a copy of a built-in model's provider block under another id and tariff is a working model", async () => {
    await s.sut.admin("PUT", "/admin/v1/models/acme-ocr", {
      enabled: true,
      provider: { kind: "local", upstream_model: OCR_MODEL },
      operations: { ocr: { unit: "page", price_per_unit_microrub: 1_000 } },
    });
    const a = await s.sut.account();
    const fileId = await upload(a, "text-layer.pdf");
    let accepted: HttpAnswer<JobRecord> | undefined;
    // The catalog reaches media-jobs within its refresh (200 ms here) or at once over the bus.
    await eventually(async () => (accepted = await s.submit(a.key, "/v1/ocr", { model: "acme-ocr", file_id: fileId })).status !== 404, 10_000, "the new model");
    accepted = accepted!;
    expect(accepted.json.billing.estimated_cost_microrub).toBe(2_000);
    expect(await s.waitForJob(a.key, accepted.json.id)).toMatchObject({ status: "succeeded", model: "acme-ocr", billing: { cost_microrub: 2_000 } });
  });
});

describe("idempotency", () => {
  test("202 on creation, 200 with the same job on a repeat after it completed; another body under the key is 422", async () => {
    const a = await s.sut.account();
    const key = randomUUID();
    const body = { model: TEXT_MODEL, input: "Idempotency is a promise." };
    const first = await s.submit(a.key, "/v1/text/analysis", body, key);
    expect(first.status).toBe(202);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    await s.waitForJob(a.key, first.json.id);
    const repeat = await s.submit(a.key, "/v1/text/analysis", { input: body.input, model: body.model }, key);
    expect(repeat.status).toBe(200);
    expect(repeat.headers.get("idempotent-replayed")).toBe("true");
    expect(repeat.json).toMatchObject({ id: first.json.id, status: "succeeded" });
    const mismatch = await s.submit(a.key, "/v1/text/analysis", { ...body, input: "Another text." }, key);
    expect([mismatch.status, errorCode(mismatch)]).toEqual([422, "idempotency_key_mismatch"]);
    const missing = await s.call(a.key, "POST", "/v1/text/analysis", body);
    expect([missing.status, errorCode(missing)]).toEqual([400, "idempotency_key_required"]);
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: CREDIT - body.input.length * PRICE.character });
  });

  test("a repeat while the job is still on its way is 202 with the same job", async () => {
    const a = await s.sut.account();
    const key = randomUUID();
    const body = slowOcrJob(await upload(a, "english.png"), 4);
    const first = await s.submit(a.key, "/v1/ocr", body, key);
    const repeat = await s.submit(a.key, "/v1/ocr", body, key);
    expect(repeat.status).toBe(202);
    expect(repeat.headers.get("idempotent-replayed")).toBe("true");
    expect(repeat.json.id).toBe(first.json.id);
    expect(["queued", "running"]).toContain(repeat.json.status);
    await s.waitForJob(a.key, first.json.id);
  });
});

describe("input files", () => {
  test("another user's file is 404 file_not_found, as a missing one is; a file not verified is 409", async () => {
    const owner = await s.sut.account();
    const other = await s.sut.account();
    const fileId = await upload(owner, "english.png");
    const foreign = await s.submit(other.key, "/v1/ocr", { model: OCR_MODEL, file_id: fileId });
    expect([foreign.status, errorCode(foreign)]).toEqual([404, "file_not_found"]);
    const missing = await s.submit(other.key, "/v1/ocr", { model: OCR_MODEL, file_id: randomUUID() });
    expect([missing.status, errorCode(missing)]).toEqual([404, "file_not_found"]);
    const notUploaded = await s.call<{ id: string }>(other.key, "POST", "/v1/files", {
      filename: "x.png",
      mime_type: "image/png",
      size_bytes: 10,
      sha256: "0".repeat(64),
    });
    const unverified = await s.submit(other.key, "/v1/ocr", { model: OCR_MODEL, file_id: notUploaded.json.id });
    expect([unverified.status, errorCode(unverified)]).toEqual([409, "file_not_verified"]);
    expect(await s.sut.admin("GET", `/admin/v1/organizations/${other.organizationId}/balance`)).toMatchObject({
      reserved_microrub: 0,
      available_microrub: CREDIT,
    });
  });
});

describe("reading jobs", () => {
  test("the caller's user's jobs, newest first, a page at a time; another user's job is 404", async () => {
    const a = await s.sut.account();
    const ids: string[] = [];
    for (const n of [1, 2, 3]) ids.push((await s.submit(a.key, "/v1/text/analysis", { model: TEXT_MODEL, input: `Job number ${n}.` })).json.id);
    const first = await s.call<JobList>(a.key, "GET", "/v1/jobs?limit=2");
    expect(first.json.data.map((j) => j.id)).toEqual([ids[2], ids[1]]);
    expect(first.json).toMatchObject({ object: "list", has_more: true, last_id: ids[1] });
    const second = await s.call<JobList>(a.key, "GET", `/v1/jobs?limit=2&after=${first.json.last_id}`);
    expect(second.json.data.map((j) => j.id)).toEqual([ids[0]]);
    expect(second.json.has_more).toBe(false);
    expect((await s.call(a.key, "GET", "/v1/jobs?limit=101")).status).toBe(400);

    const other = await s.sut.account();
    const foreign = await s.call(other.key, "GET", `/v1/jobs/${ids[0]}`);
    expect([foreign.status, errorCode(foreign)]).toEqual([404, "not_found"]);
    expect((await s.call<JobList>(other.key, "GET", "/v1/jobs")).json.data).toEqual([]);
    for (const id of ids) await s.waitForJob(a.key, id);
  });

  test("reading a job takes the right of its operation", async () => {
    const a = await s.sut.account();
    const textJob = await s.submit(a.key, "/v1/text/analysis", { model: TEXT_MODEL, input: "Scoped." });
    const { user_id } = await s.sut.admin<{ user_id: string }>("GET", `/admin/v1/keys/${a.keyId}`);
    const imagesOnly = await s.sut.admin<{ key: string }>("POST", "/admin/v1/keys", {
      user_id,
      organization_id: a.organizationId,
      scopes: ["images"],
      daily_budget_microrub: 1_000_000,
    });
    const denied = await s.call(imagesOnly.key, "GET", `/v1/jobs/${textJob.json.id}`);
    expect([denied.status, errorCode(denied)]).toEqual([403, "insufficient_scope"]);
    expect((await s.call<JobList>(imagesOnly.key, "GET", "/v1/jobs")).json.data).toEqual([]);
    expect((await s.call<JobRecord>(a.key, "GET", `/v1/jobs/${textJob.json.id}`)).status).toBe(200);
    await s.waitForJob(a.key, textJob.json.id);
  });
});

describe("cancel", () => {
  test("a queued job is cancelled and its hold released; a running one is not, and finishes", async () => {
    const a = await s.sut.account();
    const pages = 20;
    const long = await s.submit(a.key, "/v1/ocr", slowOcrJob(await upload(a, "english.png"), pages));
    await s.waitForJob(a.key, long.json.id, (j) => j.status !== "queued");
    // The one worker is busy with the long job, so this one waits in the queue.
    const waiting = await s.submit(a.key, "/v1/text/analysis", { model: TEXT_MODEL, input: "Never analysed." });
    expect(waiting.json.status).toBe("queued");

    const cancelled = await s.call<JobRecord>(a.key, "POST", `/v1/jobs/${waiting.json.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.json).toMatchObject({
      status: "failed",
      started_at: null,
      error: { code: "cancelled" },
      billing: { status: "released", cost_microrub: 0 },
    });
    const again = await s.call<JobRecord>(a.key, "POST", `/v1/jobs/${waiting.json.id}/cancel`);
    expect([again.status, again.json.error?.code]).toEqual([200, "cancelled"]);

    const running = await s.call(a.key, "POST", `/v1/jobs/${long.json.id}/cancel`);
    expect([running.status, errorCode(running)]).toEqual([409, "conflict"]);
    const done = await s.waitForJob(a.key, long.json.id);
    expect(done).toMatchObject({ status: "succeeded", billing: { cost_microrub: pages * PRICE.ocr } });
    expect((await s.call<JobRecord>(a.key, "GET", `/v1/jobs/${waiting.json.id}`)).json).toMatchObject({ status: "failed", started_at: null });
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: CREDIT - pages * PRICE.ocr });
    const finished = await s.call(a.key, "POST", `/v1/jobs/${long.json.id}/cancel`);
    expect([finished.status, errorCode(finished)]).toEqual([409, "conflict"]);
  });
});

describe("billing's hold audit", () => {
  test("answers for each hold what became of its job", async () => {
    const a = await s.sut.account();
    const ok = await s.submit(a.key, "/v1/text/analysis", { model: TEXT_MODEL, input: "Audited." });
    const bad = await s.submit(a.key, "/v1/images/edits", { model: EDIT_MODEL, file_id: await upload(a, "english.png"), prompt: "crop 10x10 at 9000,9000" });
    const [okJob] = [await s.waitForJob(a.key, ok.json.id), await s.waitForJob(a.key, bad.json.id)];
    const stranger = randomUUID();
    const holds = [
      { hold_id: ok.json.id, owner_ref: ok.json.id },
      { hold_id: bad.json.id, owner_ref: bad.json.id },
      { hold_id: stranger, owner_ref: stranger },
      { hold_id: randomUUID(), owner_ref: ok.json.id },
    ];
    const { headers, payload } = signedCall("billing-ledger", "media-jobs", { kind: "service", service: "billing-ledger" }, "POST", "/internal/v1/hold-audit", {
      holds,
    });
    const res = await fetch(`${s.sut.system.urls["media-jobs"]}/internal/v1/hold-audit`, { method: "POST", headers, body: payload });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { verdicts: unknown[] }).verdicts).toEqual([
      { hold_id: ok.json.id, status: "settle", amount_microrub: okJob.billing.cost_microrub },
      { hold_id: bad.json.id, status: "release", reason: expect.any(String) },
      { hold_id: stranger, status: "absent" },
      { hold_id: holds[3]!.hold_id, status: "absent" },
    ]);
  });
});

describe("the books cross-check", () => {
  test("lists final jobs as the holds they settled or released, a page at a time, for billing-ledger only", async () => {
    const a = await s.sut.account();
    const ok = await s.submit(a.key, "/v1/text/analysis", { model: TEXT_MODEL, input: "Cross-checked." });
    const bad = await s.submit(a.key, "/v1/images/edits", { model: EDIT_MODEL, file_id: await upload(a, "english.png"), prompt: "crop 10x10 at 9000,9000" });
    const okJob = await s.waitForJob(a.key, ok.json.id);
    await s.waitForJob(a.key, bad.json.id);

    const page = async (after: unknown, signer: "billing-ledger" | "gateway" = "billing-ledger") => {
      const body = { after, limit: 1 };
      const { headers, payload } = signedCall(signer, "media-jobs", { kind: "service", service: signer }, "POST", "/internal/v1/final-holds", body);
      return fetch(`${s.sut.system.urls["media-jobs"]}/internal/v1/final-holds`, { method: "POST", headers, body: payload });
    };
    expect((await page(null, "gateway")).status).toBe(403);

    const listed: {
      hold_id: string;
      status: string;
      settled_microrub: number | null;
      organization_id: string;
      key_id: string;
      grant: { amount_microrub: number; signature: string } | null;
    }[] = [];
    let after: unknown = null;
    do {
      const res = await page(after);
      expect(res.status).toBe(200);
      const json = (await res.json()) as { holds: typeof listed; next: unknown; restored_at: string | null };
      expect(json.holds.length).toBeLessThanOrEqual(1);
      expect(json.restored_at).toBeNull();
      listed.push(...json.holds);
      after = json.next;
    } while (after);
    const mine = listed.filter((h) => h.organization_id === a.organizationId);
    expect(mine).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ hold_id: ok.json.id, status: "settled", settled_microrub: okJob.billing.cost_microrub, key_id: a.keyId }),
        expect.objectContaining({ hold_id: bad.json.id, status: "released", settled_microrub: null }),
      ]),
    );
    expect(new Set(listed.map((h) => h.hold_id)).size).toBe(listed.length);
    // Each with billing's signature of its placement, for its estimate.
    for (const h of mine) {
      const claim = { hold_id: h.hold_id, kind: "request" as const, source: "media-jobs", organization_id: a.organizationId, key_id: a.keyId };
      expect(verifyGrant(testGrantKeys().trusted, { ...claim, amount_microrub: h.grant!.amount_microrub }, h.grant!.signature)).toMatchObject({ ok: true });
    }
  });

  test("a job row forged into media-jobs' database moves no money through the cross-check, with repair on or off", async () => {
    const b = await s.sut.account({ credit: 100_000_000 });
    const id = randomUUID();
    // The issue's reproduction, in media-jobs' database: a succeeded job of 500 000 000 under a hold id billing never saw.
    await s.db.query(
      `INSERT INTO media_jobs (id, key_id, user_id, organization_id, endpoint, idempotency_key, fingerprint, operation, model, plan,
         estimated_cost, hold_id, state, progress, cost, attempts, next_attempt_at, created_at, completed_at)
       VALUES ($1, $2, $3, $4, 'ocr', $5, 'f', 'ocr', $6, '{}', 500000000, $7, 'succeeded', '{}', 500000000, 1,
         now(), now() - interval '1 hour', now() - interval '1 hour')`,
      [id, b.keyId, b.userId, b.organizationId, randomUUID(), OCR_MODEL, randomUUID()],
    );
    try {
      for (const repair of [false, true]) {
        const report = await s.sut.admin<{ differences: { owner?: { owner_ref: string }; kind: string; unverified?: string; repaired: boolean }[] }>(
          "POST",
          "/admin/v1/books/cross-check",
          { repair },
        );
        expect(report.differences.filter((d) => d.owner?.owner_ref === id)).toEqual([
          expect.objectContaining({ kind: "unverifiable", unverified: "unsigned", repaired: false }),
        ]);
        expect(await s.settledBalance(b.organizationId)).toMatchObject({ balance_microrub: 100_000_000, reserved_microrub: 0 });
      }
    } finally {
      await s.db.query("DELETE FROM media_jobs WHERE id = $1", [id]);
    }
  });
});
