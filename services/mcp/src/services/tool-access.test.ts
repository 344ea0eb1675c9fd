import { missingScopes, toolsFor } from "./tool-access";

describe("tool access", () => {
  it("mcp:read alone shows only list_models: the other read tools call endpoints that need another right", () => {
    expect(toolsFor(["mcp:read"])).toEqual(["list_models"]);
  });

  it("a read tool is listed once the key also holds its endpoint's right", () => {
    expect(toolsFor(["mcp:read", "text"])).toEqual(["list_models", "quote_text", "quote_media", "get_job"]);
    expect(toolsFor(["mcp:read", "files:read"])).toEqual(["list_models", "list_files", "get_file"]);
    expect(toolsFor(["mcp:read", "images"])).toEqual(["list_models", "quote_media", "get_job"]);
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
    expect(missingScopes(["mcp:read", "text"], "edit_image")).toEqual([["mcp:invoke"], ["images"]]);
    expect(missingScopes(["mcp:read"], "list_files")).toEqual([["files:read", "files:write"]]);
    expect(missingScopes(["mcp:invoke", "images"], "edit_image")).toEqual([]);
  });
});
