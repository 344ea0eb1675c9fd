import { ToolFailure } from "../../errors";
import { FakePublicApi, ok, testCaller } from "../../../test/support/public-api.fake";
import { readTools } from "./read-tools";
import type { Tool } from "./tool";

const FILE_ID = "22222222-2222-4222-8222-222222222222";
const file = (status: string) => ({
  id: FILE_ID,
  object: "file",
  purpose: "upload",
  filename: "scan.pdf",
  mime_type: "application/pdf",
  size_bytes: 1234,
  status,
});

function tools(api: FakePublicApi): Record<string, Tool> {
  return Object.fromEntries(readTools({ api, inlineResultBytes: 1024 }).map((t) => [t.name, t]));
}

describe("file tools (the files service is not part of the MCP test system)", () => {
  it("list_files pages with limit and cursor", async () => {
    const api = new FakePublicApi().on(
      "GET",
      "/v1/files?limit=2&cursor=c1",
      ok({ object: "list", data: [file("verified")], has_more: true, next_cursor: "c2" }),
    );
    const out = await tools(api).list_files!.run({ limit: 2, cursor: "c1" }, testCaller());
    expect(out.structured).toEqual({ files: [file("verified")], has_more: true, next_cursor: "c2" });
    expect(out.summary).toContain("cursor");
  });

  it("get_file links the content of a verified file", async () => {
    const api = new FakePublicApi().on("GET", `/v1/files/${FILE_ID}`, ok(file("verified")));
    const out = await tools(api).get_file!.run({ file_id: FILE_ID }, testCaller());
    expect(out.structured).toEqual({
      file: file("verified"),
      content: { file_id: FILE_ID, mime_type: "application/pdf", size_bytes: 1234, content_url: `https://api.example.test/v1/files/${FILE_ID}/content` },
    });
    expect(out.links).toHaveLength(1);
  });

  it("get_file gives no link while the file is not verified (its content cannot be downloaded yet)", async () => {
    const api = new FakePublicApi().on("GET", `/v1/files/${FILE_ID}`, ok(file("verifying")));
    const out = await tools(api).get_file!.run({ file_id: FILE_ID }, testCaller());
    expect(out.structured).toEqual({ file: file("verifying") });
  });

  it("a refusal of the files API is the tool's failure with the API's code", async () => {
    const api = new FakePublicApi().on("GET", `/v1/files/${FILE_ID}`, {
      status: 404,
      body: { error: { code: "file_not_found", message: "no such file" } },
      retryAfterS: undefined,
    });
    const failure = (await tools(api)
      .get_file!.run({ file_id: FILE_ID }, testCaller())
      .catch((e: unknown) => e)) as ToolFailure;
    expect(failure).toBeInstanceOf(ToolFailure);
    expect(failure.error).toMatchObject({ code: "file_not_found", http_status: 404 });
  });
});
