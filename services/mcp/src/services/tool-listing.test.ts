import { McpToolName } from "@meter/contracts";
import { ToolCatalog } from "./tool-catalog";
import { toolListing } from "./tool-listing";
import { FakePublicApi } from "../../test/support/public-api.fake";

const catalog = new ToolCatalog({ api: new FakePublicApi(), jobWait: { maxWaitMs: 0, firstPollMs: 1, maxPollMs: 1 }, inlineResultBytes: 1024 });
const listings = McpToolName.options.map((name) => toolListing(catalog.get(name)!, "draft-2020-12"));

type Schema = { properties?: Record<string, { description?: string }>; oneOf?: unknown[]; required?: string[] };

describe("tool listings an LLM can follow", () => {
  it("describe every parameter of every tool", () => {
    const undescribed = listings.flatMap((t) =>
      Object.entries((t.inputSchema as Schema).properties ?? {})
        .filter(([, p]) => !p.description)
        .map(([param]) => `${String(t.name)}.${param}`),
    );
    expect(undescribed).toEqual([]);
  });

  it("state file_id or file_ids as oneOf where a tool takes exactly one of them", () => {
    for (const name of ["analyze_image", "ocr"]) {
      const schema = listings.find((t) => t.name === name)!.inputSchema as Schema;
      expect(schema.oneOf).toEqual([{ required: ["file_id"] }, { required: ["file_ids"] }]);
    }
  });

  it("let the paid text tools take a cost cap, and list_models a filter and a page", () => {
    for (const name of ["create_message", "create_response"]) {
      expect((listings.find((t) => t.name === name)!.inputSchema as Schema).properties).toHaveProperty("max_cost_microrub");
    }
    expect(Object.keys((listings.find((t) => t.name === "list_models")!.inputSchema as Schema).properties ?? {})).toEqual(["operation", "limit", "cursor"]);
  });

  it("say what the tools really take and return", () => {
    const description = (name: string) => String(listings.find((t) => t.name === name)!.description);
    expect(description("analyze_text")).not.toMatch(/input files must be/i);
    expect(description("analyze_text")).toMatch(/no file needed/);
    expect(description("ocr")).toMatch(/JSON document/);
    expect(description("ocr")).not.toMatch(/text file/);
  });
});
