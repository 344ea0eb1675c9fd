import { parse } from "node:url";
import { forwardedPath } from "./service-proxy";

describe("forwardedPath", () => {
  test.each([
    "/v1/messages",
    "/v1/files/3f2a/content?download=1&x=%20y",
    "/v1//double/slash",
    "/v1/a:b@c;d,e+f*g!h$i(j)k~l",
    "/v1/with space",
    "/v1/quote'\"<>{}|^`\\",
    "/v1/x#fragment",
    "http://other.example/v1/messages?q=1",
    "//host/path",
  ])("is url.parse's path for %s", (url) => {
    expect(forwardedPath(url)).toBe(parse(url).path ?? "");
  });
});
