import { ApiUnreachable } from "../../domain/public-api";
import { ToolFailure } from "../../errors";
import { jobTools } from "./job-tools";
import { FakePublicApi, ok, testCaller } from "../../../test/support/public-api.fake";
import type { Tool } from "./tool";

const JOB_ID = "11111111-1111-4111-8111-111111111111";
const FILE_ID = "22222222-2222-4222-8222-222222222222";
const job = (status: string, extra: Record<string, unknown> = {}) => ({
  id: JOB_ID,
  object: "job",
  operation: "ocr",
  model: "m",
  status,
  result: null,
  error: null,
  billing: { status: "reserved", estimated_cost_microrub: 50, cost_microrub: null },
  progress: { done: 0, total: 1, unit: "page" },
  ...extra,
});
const textResult = { file_id: FILE_ID, mime_type: "text/plain", size_bytes: 11 };

function tools(api: FakePublicApi, maxWaitMs = 2_000): Record<string, Tool> {
  const list = jobTools({ api, wait: { maxWaitMs, firstPollMs: 10, maxPollMs: 20 }, inlineResultBytes: 1024 });
  return Object.fromEntries(list.map((t) => [t.name, t]));
}

describe("job tools", () => {
  it("create the job with the idempotency key as a header, wait for it, and return the result as a link plus its short text", async () => {
    const api = new FakePublicApi()
      .on("POST", "/v1/ocr", ok(job("queued"), 202))
      .on("GET", `/v1/jobs/${JOB_ID}`, ok(job("running")), ok(job("succeeded", { result: textResult })))
      .on("GET", `/v1/files/${FILE_ID}/content`, ok("hello world"));
    const out = await tools(api).ocr!.run({ model: "m", file_id: FILE_ID, idempotency_key: "k-1" }, testCaller());
    expect(api.requests[0]).toEqual({ method: "POST", path: "/v1/ocr", body: { model: "m", file_id: FILE_ID }, idempotencyKey: "k-1" });
    expect(out.structured).toMatchObject({
      idempotency_key: "k-1",
      status: "succeeded",
      job: { id: JOB_ID, status: "succeeded" },
      result_file: { file_id: FILE_ID, mime_type: "text/plain", size_bytes: 11, content_url: `https://api.example.test/v1/files/${FILE_ID}/content` },
      result_text: "hello world",
    });
    expect(out.links).toEqual([
      { type: "resource_link", uri: `https://api.example.test/v1/files/${FILE_ID}/content`, name: `result of job ${JOB_ID}`, mimeType: "text/plain", size: 11 },
    ]);
  });

  it("never inlines a large or binary result: a link only", async () => {
    const api = new FakePublicApi().on(
      "POST",
      "/v1/images/edits",
      ok(job("succeeded", { operation: "image_edit", result: { file_id: FILE_ID, mime_type: "image/png", size_bytes: 900_000 } }), 200),
    );
    const out = await tools(api).edit_image!.run({ model: "m", prompt: "p", file_id: FILE_ID }, testCaller());
    expect(out.structured.result_text).toBeUndefined();
    expect(out.structured.idempotency_key).toMatch(/^mcp-/);
    expect(api.requests.map((r) => r.path)).toEqual(["/v1/images/edits"]);
  });

  it("return a job still running after the wait, to be polled with get_job", async () => {
    const api = new FakePublicApi().on("POST", "/v1/text/analysis", ok(job("queued"), 202)).on("GET", `/v1/jobs/${JOB_ID}`, ok(job("running")));
    const out = await tools(api, 100).analyze_text!.run({ model: "m", input: "text" }, testCaller());
    expect(out.structured).toMatchObject({ status: "running", job: { status: "running" } });
    expect(out.summary).toContain("get_job");
  });

  it("stop waiting at once when the client goes away", async () => {
    const gone = new AbortController();
    const api = new FakePublicApi().on("POST", "/v1/ocr", ok(job("queued"), 202)).on("GET", `/v1/jobs/${JOB_ID}`, () => {
      gone.abort();
      return ok(job("running"));
    });
    const started = Date.now();
    const out = await tools(api, 60_000).ocr!.run({ model: "m", file_id: FILE_ID }, testCaller(gone.signal));
    expect(out.structured.status).toBe("running");
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("turn a failed job into a failure with the job's own code", async () => {
    const api = new FakePublicApi().on("POST", "/v1/images/analysis", ok(job("failed", { error: { code: "invalid_input", message: "not an image" } }), 200));
    const failure = await tools(api)
      .analyze_image!.run({ model: "m", file_id: FILE_ID, idempotency_key: "k-2" }, testCaller())
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ToolFailure);
    expect((failure as ToolFailure).error.code).toBe("invalid_input");
    expect((failure as ToolFailure).context).toMatchObject({ idempotency_key: "k-2", status: "failed", job: { id: JOB_ID } });
  });

  it("pass on the API's refusal with the idempotency key", async () => {
    const api = new FakePublicApi().on("POST", "/v1/ocr", {
      status: 409,
      body: { error: { code: "file_not_verified", message: "not yet" } },
      retryAfterS: undefined,
    });
    const failure = (await tools(api)
      .ocr!.run({ model: "m", file_id: FILE_ID, idempotency_key: "k-3" }, testCaller())
      .catch((e: unknown) => e)) as ToolFailure;
    expect(failure.error).toMatchObject({ code: "file_not_verified", http_status: 409 });
    expect(failure.context).toEqual({ idempotency_key: "k-3" });
  });

  it("report a lost answer as pending, never as a failure (the job may exist and be paid)", async () => {
    const api = new FakePublicApi().on("POST", "/v1/ocr", new ApiUnreachable("socket hang up", "unknown"));
    const out = await tools(api).ocr!.run({ model: "m", file_id: FILE_ID, idempotency_key: "k-4" }, testCaller());
    expect(out.structured).toEqual({ idempotency_key: "k-4", status: "pending" });
    expect(out.summary).toContain('"k-4"');
  });

  it("report a request that never left as a failure with nothing charged", async () => {
    const api = new FakePublicApi().on("POST", "/v1/ocr", new ApiUnreachable("connection refused", "not_delivered"));
    const failure = (await tools(api)
      .ocr!.run({ model: "m", file_id: FILE_ID }, testCaller())
      .catch((e: unknown) => e)) as ToolFailure;
    expect(failure.error.code).toBe("service_unavailable");
  });
});
