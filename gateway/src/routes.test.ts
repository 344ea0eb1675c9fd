import { methodsAllowedOn, routeMatches } from "./routes";

describe("route matching", () => {
  it("matches parameters one segment at a time and wildcards across segments", () => {
    expect(routeMatches("/v1/files/:id", "/v1/files/abc")).toBe(true);
    expect(routeMatches("/v1/files/:id", "/v1/files/abc/content")).toBe(false);
    expect(routeMatches("/v1/files/:id/content", "/v1/files/abc/content")).toBe(true);
    expect(routeMatches("/v1/models/*id", "/v1/models/vendor/model")).toBe(true);
    expect(routeMatches("/admin/v1/*rest", "/admin/v1")).toBe(false);
  });

  it("takes a trailing slash and nothing else around the path", () => {
    expect(routeMatches("/v1/messages", "/v1/messages/")).toBe(true);
    expect(routeMatches("/v1/messages", "/v1/messagesx")).toBe(false);
    expect(routeMatches("/v1/messages", "/x/v1/messages")).toBe(false);
  });

  it("treats the pattern's dots and the like literally", () => {
    expect(routeMatches("/v1/chat/quote", "/v1/chat/quote")).toBe(true);
    expect(routeMatches("/v1/chat.quote", "/v1/chatxquote")).toBe(false);
  });

  it("lists the methods a known path takes (405) and none for an unknown one (404)", () => {
    expect(methodsAllowedOn("/v1/messages")).toEqual(["POST"]);
    expect(methodsAllowedOn("/v1/files/abc").sort()).toEqual(["DELETE", "GET"]);
    expect(methodsAllowedOn("/v1/nothing")).toEqual([]);
  });
});
