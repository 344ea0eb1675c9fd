/** @jest-environment ./packages/media-engines/test/support/native-esm.environment.mjs */
import { a4TextPagePng } from "@meter/media-engines/test/support/generated-inputs";
import { OCR_MODEL, startMediaSystem, type MediaSystem } from "@meter/testing";
import { wrap } from "@meter/media-engines/test/support/text-render";

/**
 * An engine that stops reporting progress does not hold its job's money for as long as the worker
 * lives: past MEDIA_JOBS_STALL_TIMEOUT_MS without progress the job fails and its hold is released. Here
 * the timeout is far shorter than Tesseract needs for one dense page (well over a second), so the page
 * stands in for an engine that hangs.
 */
jest.setTimeout(300_000);

const CREDIT = 1_000_000_000;

let s: MediaSystem;
beforeAll(async () => {
  s = await startMediaSystem({ MEDIA_JOBS_CONCURRENCY: "1", MEDIA_JOBS_STALL_TIMEOUT_MS: "300" });
}, 300_000);
afterAll(async () => {
  if (!s) return;
  await s.sut.assertBooksBalance();
  await s.close();
});

test("a job whose engine makes no progress within the stall timeout fails as model_unavailable, its hold released", async () => {
  const a = await s.sut.account();
  const prose = "Every hold is owned and resolved exactly once, and every retry of paid work is bounded. ".repeat(60);
  const page = await a4TextPagePng(wrap(prose, 68).slice(0, 40));
  const id = await s.upload(a.key, page, "image/png", "dense.png");
  const accepted = await s.submit(a.key, "/v1/ocr", { model: OCR_MODEL, file_ids: [id, id] });
  expect(accepted.status).toBe(202);
  const job = await s.waitForJob(a.key, accepted.json.id);
  expect(job).toMatchObject({
    status: "failed",
    result: null,
    error: { code: "model_unavailable", message: expect.stringContaining("no progress") },
    billing: { status: "released", cost_microrub: 0 },
  });
  expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: CREDIT, available_microrub: CREDIT });
});
