/** @jest-environment ./packages/media-engines/test/support/native-esm.environment.mjs */
import { connectBus, type Bus } from "@meter/messaging";
import type { FileList } from "@meter/contracts";
import { fixture } from "@meter/media-engines/test/support/fixtures";
import { OCR_MODEL, TEXT_MODEL, isFinal, startMediaSystem, testKeys, type MediaSystem } from "@meter/testing";
import { slowOcrJob } from "./support/slow-job";

/**
 * What the queue and crashes do to jobs: a message delivered many times, a worker killed in the middle
 * of a job, a job interrupted more often than it may be. One worker taking one message at a time, and
 * a short lease, so a dead worker's job is taken up within seconds.
 */
jest.setTimeout(300_000);

const OCR_PRICE = 200_000;
const CHARACTER_PRICE = 20;
const CREDIT = 1_000_000_000;
const MAX_ATTEMPTS = 3;

let s: MediaSystem;
let bus: Bus;
beforeAll(async () => {
  s = await startMediaSystem({ MEDIA_JOBS_CONCURRENCY: "1", MEDIA_JOBS_LEASE_MS: "3000", MEDIA_JOBS_MAX_ATTEMPTS: String(MAX_ATTEMPTS) });
  bus = await connectBus({ url: s.sut.env.RABBITMQ_URL!, name: "media-jobs-test", topology: "await", keys: testKeys("media-jobs") });
}, 300_000);
afterAll(async () => {
  await bus?.close();
  if (!s) return;
  await s.sut.assertBooksBalance();
  await s.close();
});

const runsOf = async (id: string) => (await s.db.query<{ attempts: number }>("SELECT attempts FROM media_jobs WHERE id = $1", [id])).rows[0]?.attempts;
const resultFiles = async (key: string) =>
  (await s.call<FileList>(key, "GET", "/v1/files?limit=100")).json.data.filter((f) => f.purpose === "job_result").map((f) => f.id);

test("a job whose message arrives many times runs once: one run, one result file, one charge", async () => {
  const a = await s.sut.account();
  const input = "Delivered more than once.";
  const accepted = await s.submit(a.key, "/v1/text/analysis", { model: TEXT_MODEL, input });
  const duplicate = () => bus.publish("media.job.requested", { version: "v1", job_id: accepted.json.id });
  // While it is queued or running...
  await Promise.all([duplicate(), duplicate(), duplicate()]);
  const job = await s.waitForJob(a.key, accepted.json.id);
  // ...and after it is done.
  await Promise.all([duplicate(), duplicate()]);
  // One worker takes one message at a time, in order: once a job submitted now is done, every duplicate was handled.
  const marker = await s.submit(a.key, "/v1/text/analysis", { model: TEXT_MODEL, input: "x" });
  await s.waitForJob(a.key, marker.json.id);

  expect(await runsOf(job.id)).toBe(1);
  const now = (await s.call(a.key, "GET", `/v1/jobs/${job.id}`)).json;
  expect(now).toMatchObject({ status: "succeeded", started_at: job.started_at, completed_at: job.completed_at, result: job.result });
  expect(await resultFiles(a.key)).toHaveLength(2);
  expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: CREDIT - (input.length + 1) * CHARACTER_PRICE });
});

test("a worker killed mid-job: the job is taken up again when its lease runs out, and completes once", async () => {
  const a = await s.sut.account();
  const { file } = fixture("english.png");
  const pages = 12;
  const accepted = await s.submit(a.key, "/v1/ocr", slowOcrJob(await s.upload(a.key, file.data, file.mimeType), pages));
  await s.waitForJob(a.key, accepted.json.id, (j) => j.status === "running" && j.progress.done >= 1);

  await s.sut.system.kill("media-jobs", "SIGKILL");
  expect((await s.db.query("SELECT state, attempts FROM media_jobs WHERE id = $1", [accepted.json.id])).rows[0]).toEqual({ state: "running", attempts: 1 });
  await s.sut.system.start("media-jobs");

  const job = await s.waitForJob(a.key, accepted.json.id, isFinal, 240_000);
  expect(job).toMatchObject({ status: "succeeded", usage: { quantity: pages }, billing: { status: "settled", cost_microrub: pages * OCR_PRICE } });
  expect(await runsOf(job.id)).toBe(2);
  expect(await resultFiles(a.key)).toEqual([job.result!.file_id]);
  const document = JSON.parse((await s.download(a.key, job.result!.file_id)).toString("utf8")) as { page_count: number };
  expect(document.page_count).toBe(pages);
  expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: CREDIT - pages * OCR_PRICE });
});

test(`a job interrupted ${MAX_ATTEMPTS} times fails and its hold is released`, async () => {
  const a = await s.sut.account();
  const { file } = fixture("english.png");
  const accepted = await s.submit(a.key, "/v1/ocr", slowOcrJob(await s.upload(a.key, file.data, file.mimeType), 12));
  await s.waitForJob(a.key, accepted.json.id, (j) => j.status === "running");

  await s.sut.system.kill("media-jobs", "SIGKILL");
  // As if it had died under two workers before this one.
  await s.db.query("UPDATE media_jobs SET attempts = $2 WHERE id = $1", [accepted.json.id, MAX_ATTEMPTS]);
  await s.sut.system.start("media-jobs");

  const job = await s.waitForJob(a.key, accepted.json.id, isFinal, 240_000);
  expect(job).toMatchObject({ status: "failed", result: null, error: { code: "internal_error" }, billing: { status: "released", cost_microrub: 0 } });
  expect(await runsOf(job.id)).toBe(MAX_ATTEMPTS);
  expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: CREDIT });
});

test("a queued job whose message was lost is sent again", async () => {
  const a = await s.sut.account();
  const { file } = fixture("english.png");
  // The one worker is busy; the job behind it waits in the queue.
  const busy = await s.submit(a.key, "/v1/ocr", slowOcrJob(await s.upload(a.key, file.data, file.mimeType), 6));
  await s.waitForJob(a.key, busy.json.id, (j) => j.status === "running");
  const lost = await s.submit(a.key, "/v1/ocr", { model: OCR_MODEL, file_id: busy.json.file_ids[0] });
  // Its message is consumed as a duplicate would be (it finds the job not queued) while it looks taken...
  await s.db.query("UPDATE media_jobs SET state = 'running', owner_id = gen_random_uuid(), next_attempt_at = now() + interval '1 hour' WHERE id = $1", [
    lost.json.id,
  ]);
  await s.waitForJob(a.key, busy.json.id);
  const marker = await s.submit(a.key, "/v1/text/analysis", { model: TEXT_MODEL, input: "x" });
  await s.waitForJob(a.key, marker.json.id);
  // ...then it is queued again with nobody to tell, and overdue: the reconciler sends its message again.
  await s.db.query("UPDATE media_jobs SET state = 'queued', owner_id = NULL, next_attempt_at = now() WHERE id = $1", [lost.json.id]);
  const job = await s.waitForJob(a.key, lost.json.id);
  expect(job).toMatchObject({ status: "succeeded", billing: { cost_microrub: OCR_PRICE } });
});
