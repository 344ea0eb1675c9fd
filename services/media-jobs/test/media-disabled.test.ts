import { randomUUID } from "node:crypto";
import { startSystemUnderTest, type SystemUnderTest } from "@meter/testing";

/** MEDIA_ENABLED is off by default: every media endpoint, quotes included, is 503 `media_disabled`. */
let sut: SystemUnderTest;
beforeAll(async () => {
  sut = await startSystemUnderTest({ only: ["billing-ledger", "gateway"] });
}, 120_000);
afterAll(async () => {
  await sut?.close();
});

test("with MEDIA_ENABLED off, every media endpoint answers 503 media_disabled and nothing is reserved", async () => {
  const a = await sut.account();
  const id = randomUUID();
  const calls: [string, string, unknown][] = [
    ["POST", "/v1/images/edits", { model: "meter-local-image-edit", file_id: id, prompt: "rotate 90" }],
    ["POST", "/v1/images/analysis", { model: "meter-local-image-analysis", file_id: id }],
    ["POST", "/v1/ocr", { model: "meter-local-ocr", file_id: id }],
    ["POST", "/v1/text/analysis", { model: "meter-local-text-analysis", input: "Hello." }],
    ["POST", "/v1/quotes", { model: "meter-local-ocr", operation: "ocr", file_id: id }],
    ["GET", "/v1/jobs", undefined],
    ["GET", `/v1/jobs/${id}`, undefined],
    ["POST", `/v1/jobs/${id}/cancel`, undefined],
  ];
  for (const [method, path, body] of calls) {
    const res = await fetch(sut.url + path, {
      method,
      headers: { authorization: `Bearer ${a.key}`, "idempotency-key": randomUUID(), ...(body ? { "content-type": "application/json" } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    expect([method, path, res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([method, path, 503, "media_disabled"]);
  }
  expect(await sut.admin("GET", `/admin/v1/organizations/${a.organizationId}/balance`)).toMatchObject({ reserved_microrub: 0 });
});
