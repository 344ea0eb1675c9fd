import { createHash, randomUUID } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import sharp from "sharp";
import { startSystemUnderTest, waitFor, type SystemUnderTest, type TestAccount } from "@meter/testing";

/**
 * An MCP client's media tools on models served by upstream providers (docs/api.md, "Media on upstream
 * models"): the tools call the public API with the caller's key, so an upstream model is billed and
 * answered as it is for a direct client. The official MCP SDK client, through the gateway.
 */
jest.setTimeout(180_000);

const PRICE = { edit: 300_000, image: 100_000 };
const CREDIT = 1_000_000_000;

let sut: SystemUnderTest;
beforeAll(async () => {
  sut = await startSystemUnderTest({
    only: ["billing-ledger", "files", "media-jobs", "mcp", "gateway"],
    env: { MEDIA_ENABLED: "true", MEDIA_JOBS_LEASE_MS: "3000", COMPLETE_WAIT_MS: "20000" },
  });
  const provider = (kind: string, baseUrl: string) => ({ kind, base_url: baseUrl, upstream_model: `mcp-${kind}`, api_key_env: "FAKE_UPSTREAM_API_KEY" });
  await sut.admin("PUT", "/admin/v1/models/mcp-up-edit", {
    enabled: true,
    provider: provider("openai-images", sut.fake.openaiBaseUrl),
    operations: { image_edit: { unit: "request", price_per_unit_microrub: PRICE.edit } },
  });
  await sut.admin("PUT", "/admin/v1/models/mcp-up-vision", {
    enabled: true,
    provider: provider("anthropic", sut.fake.anthropicBaseUrl),
    operations: { image_analysis: { unit: "image", price_per_unit_microrub: PRICE.image } },
  });
}, 240_000);
afterAll(async () => {
  if (!sut) return;
  await sut.assertBooksBalance();
  await sut.close();
});

async function connect(key: string): Promise<Client> {
  const client = new Client({ name: "meter-e2e", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${sut.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

async function upload(a: TestAccount, data: Buffer): Promise<string> {
  const headers = { authorization: `Bearer ${a.key}`, "content-type": "application/json" };
  const created = (await (
    await fetch(`${sut.url}/v1/files`, {
      method: "POST",
      headers,
      body: JSON.stringify({ filename: "in.png", mime_type: "image/png", size_bytes: data.length, sha256: createHash("sha256").update(data).digest("hex") }),
    })
  ).json()) as { id: string; upload: { url: string; headers: Record<string, string> } };
  await fetch(created.upload.url, { method: "PUT", headers: created.upload.headers, body: data });
  await fetch(`${sut.url}/v1/files/${created.id}/complete`, { method: "POST", headers: { authorization: `Bearer ${a.key}` } });
  await waitFor(
    async () => ((await (await fetch(`${sut.url}/v1/files/${created.id}`, { headers })).json()) as { status: string }).status === "verified",
    "the upload to be verified",
    30_000,
  );
  return created.id;
}

/** Calls a paid media tool, then get_job until the job is final; the job's fields as get_job shows them. */
async function runTool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<{ job: { status: string; billing: unknown }; result_text?: string }> {
  type Fields = { job: { id: string; status: string; billing: unknown }; result_text?: string };
  const first = (await client.callTool({ name, arguments: { ...args, idempotency_key: randomUUID() } })) as CallToolResult;
  expect(first.isError).toBeFalsy();
  let fields = first.structuredContent as Fields;
  return waitFor(
    async () => {
      if (fields.job.status === "succeeded" || fields.job.status === "failed") return fields;
      fields = ((await client.callTool({ name: "get_job", arguments: { job_id: fields.job.id } })) as CallToolResult).structuredContent as Fields;
      return undefined;
    },
    `the ${name} job to finish`,
    60_000,
  );
}

test("edit_image and analyze_image on upstream models: the upstream serves them, each billed its tariff once", async () => {
  const a = await sut.account({ credit: CREDIT });
  const fileId = await upload(
    a,
    await sharp({ create: { width: 32, height: 32, channels: 3, background: "#3366cc" } })
      .png()
      .toBuffer(),
  );
  const client = await connect(a.key);
  try {
    await waitFor(
      async () =>
        (await client.callTool({ name: "quote_media", arguments: { model: "mcp-up-edit", operation: "image_edit", file_id: fileId, prompt: "x" } })).isError !==
        true,
      "the catalog to reach media-jobs",
      10_000,
    );

    const edited = await runTool(client, "edit_image", { model: "mcp-up-edit", file_id: fileId, prompt: "Make it look like a watercolour" });
    expect(edited.job).toMatchObject({ status: "succeeded", billing: { status: "settled", cost_microrub: PRICE.edit } });
    const edit = sut.fake.calls.find((c) => c.path === "/v1/images/edits");
    expect(edit?.body).toMatchObject({ model: "mcp-openai-images", prompt: "Make it look like a watercolour" });

    const analysed = await runTool(client, "analyze_image", { model: "mcp-up-vision", file_id: fileId });
    expect(analysed.job).toMatchObject({ status: "succeeded", billing: { status: "settled", cost_microrub: PRICE.image } });
    expect(analysed.result_text).toContain("[image 1: image/png,");
  } finally {
    await client.close();
  }
  expect((await sut.settledBalance(a.organizationId)).balance_microrub).toBe(CREDIT - PRICE.edit - PRICE.image);
});
