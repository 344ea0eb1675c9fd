import type { JobRecord } from "../domain/job-record";
import { renderJob } from "./job.render";

const base: JobRecord = {
  id: "6f1c2a3b-4d5e-8f60-9a1b-2c3d4e5f6a7b",
  keyId: "0d9f6a6e-2b1c-4b8e-9f3a-1c2d3e4f5a6b",
  userId: "1d9f6a6e-2b1c-4b8e-9f3a-1c2d3e4f5a6b",
  organizationId: "2d9f6a6e-2b1c-4b8e-9f3a-1c2d3e4f5a6b",
  endpoint: "images/edits",
  idempotencyKey: "k",
  requestId: "r",
  fingerprint: "f",
  operation: "image_edit",
  model: "meter-local-image-edit",
  plan: {
    operation: "image_edit",
    engine: "meter-local-image-edit",
    tariff: { unit: "request", price_per_unit_microrub: 300 },
    quantity: 1,
    settings: {},
    files: [{ id: "7f1c2a3b-4d5e-4f60-9a1b-2c3d4e5f6a7b", mimeType: "image/png", sizeBytes: 10, filename: "a.png" }],
    edit: { version: "v1", steps: [{ op: "rotate", degrees: 90 }] },
  },
  estimatedCost: 300,
  holdId: "6f1c2a3b-4d5e-8f60-9a1b-2c3d4e5f6a7b",
  state: "reserving",
  progress: { done: 0, total: 1, unit: "step" },
  result: null,
  quantity: null,
  cost: null,
  error: null,
  attempts: 1,
  provider: null,
  upstreamUsage: null,
  ownerId: null,
  nextAttemptAt: new Date("2026-01-01T00:00:05Z"),
  createdAt: new Date("2026-01-01T00:00:00Z"),
  queuedAt: null,
  startedAt: null,
  completedAt: null,
};

describe("renderJob", () => {
  test("a job on its way is queued or running with its hold reserved; a reservation under way looks queued", () => {
    expect(renderJob(base)).toMatchObject({
      status: "queued",
      billing: { status: "reserved", estimated_cost_microrub: 300, cost_microrub: null },
      result: null,
      expires_at: null,
    });
    expect(renderJob({ ...base, state: "running", startedAt: new Date("2026-01-01T00:00:01Z") })).toMatchObject({
      status: "running",
      started_at: "2026-01-01T00:00:01.000Z",
    });
  });

  test("a succeeded job shows its result file, its expiry and the charge; a failed one its error and nothing charged", () => {
    const result = { file_id: "8f1c2a3b-4d5e-4f60-9a1b-2c3d4e5f6a7b", mime_type: "image/png", size_bytes: 99, expires_at: "2026-01-08T00:00:00.000Z" };
    expect(renderJob({ ...base, state: "succeeded", result, quantity: 1, cost: 300 })).toMatchObject({
      status: "succeeded",
      result: { file_id: result.file_id, mime_type: "image/png", size_bytes: 99 },
      expires_at: result.expires_at,
      billing: { status: "settled", cost_microrub: 300 },
      usage: { unit: "request", quantity: 1 },
    });
    expect(renderJob({ ...base, state: "failed", error: { code: "invalid_input", message: "no" } })).toMatchObject({
      status: "failed",
      error: { code: "invalid_input", message: "no" },
      billing: { status: "released", cost_microrub: 0 },
    });
  });

  test("an edit carries its plan and its input files", () => {
    const body = renderJob(base);
    expect(body.plan).toEqual(base.plan.edit);
    expect(body.file_ids).toEqual([base.plan.files[0]!.id]);
    expect(renderJob({ ...base, plan: { ...base.plan, edit: undefined } })).not.toHaveProperty("plan");
  });
});
