import { toolsFor, missingScopes } from "./tool-access";

const READ = ["list_models", "quote_text", "quote_media", "get_job", "list_files", "get_file"];

describe("tool access", () => {
  it("mcp:read alone shows the read tools and no paid one", () => {
    expect(toolsFor(["mcp:read"])).toEqual(READ);
  });

  it("a paid tool needs mcp:invoke and the right of its operation", () => {
    expect(toolsFor(["mcp:invoke", "text"])).toEqual(["create_message", "create_response", "ocr", "analyze_text"]);
    expect(toolsFor(["mcp:invoke", "images"])).toEqual(["edit_image", "analyze_image"]);
    expect(toolsFor(["text", "images"])).toEqual([]);
  });

  it("a key with every scope sees all twelve tools", () => {
    expect(toolsFor(["mcp:read", "mcp:invoke", "text", "images", "files:read", "files:write"])).toHaveLength(12);
  });

  it("names what is missing", () => {
    expect(missingScopes(["mcp:read", "text"], "edit_image")).toEqual(["mcp:invoke", "images"]);
    expect(missingScopes(["mcp:invoke", "images"], "edit_image")).toEqual([]);
  });
});
