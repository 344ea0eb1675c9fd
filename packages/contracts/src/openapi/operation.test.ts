import { routePathOf, type ApiOperation } from "./operation";

const op = (path: string, rest?: string): ApiOperation => ({
  method: "get",
  path,
  ...(rest ? { rest } : {}),
  summary: "x",
  tag: "Admin",
  security: "admin",
  answers: {},
  errors: [],
});

describe("routePathOf", () => {
  it("turns the document's path into the Express pattern under the router's mount point", () => {
    expect(routePathOf(op("/admin/v1/organizations/{organization_id}/ledger"), "/admin/v1")).toBe("/organizations/:organization_id/ledger");
    expect(routePathOf(op("/v1/files/{file_id}"))).toBe("/v1/files/:file_id");
  });

  it("lets a rest parameter take slashes (a model id: vendor/model)", () => {
    expect(routePathOf(op("/v1/models/{model_id}", "model_id"), "/v1")).toBe("/models/*model_id");
  });

  it("mounts the mount point itself at /", () => {
    expect(routePathOf(op("/cabinet"), "/cabinet")).toBe("/");
  });

  it("refuses an operation outside the router's mount point", () => {
    expect(() => routePathOf(op("/v1/models"), "/admin/v1")).toThrow("get /v1/models is not under /admin/v1");
  });
});
