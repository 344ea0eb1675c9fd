import { METHODS } from "node:http";

/** A route an Express app answers: its method (`ALL` for app.all) and its full Express pattern. */
export interface MountedRoute {
  method: string;
  path: string;
}

interface Layer {
  rawPath?: string | RegExp | (string | RegExp)[];
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

/**
 * Every route of an Express 5 app, found by walking its router stack and the routers mounted in it
 * (`app.use("/cabinet", router)`): what a request can actually reach. Plain middleware (a proxy
 * mounted with `use`, say) is no route and is not listed.
 */
export function mountedRoutes(app: { router: { stack: Layer[] } }): MountedRoute[] {
  return walk(app.router.stack, "");
}

function walk(stack: Layer[], prefix: string): MountedRoute[] {
  return stack.flatMap((layer) => {
    if (layer.route) {
      const own = layer.route.methods;
      // app.all() registers every method Node knows, Router#all() the one `_all`: both are ALL.
      const all = own._all || METHODS.every((m) => own[m.toLowerCase()]);
      const methods = all ? ["ALL"] : Object.keys(own).map((m) => m.toUpperCase());
      return paths(layer.route.path).flatMap((p) => methods.map((method) => ({ method, path: join(prefix, p) })));
    }
    const inner = layer.handle?.stack;
    if (!inner) return [];
    return paths(layer.rawPath ?? "/").flatMap((p) => walk(inner, join(prefix, p)));
  });
}

function paths(p: string | RegExp | (string | RegExp)[]): string[] {
  return (Array.isArray(p) ? p : [p]).map((one) => {
    if (typeof one !== "string") throw new Error(`a route at a regular expression (${String(one)}) cannot be matched to a document`);
    return one;
  });
}

function join(prefix: string, p: string): string {
  const joined = `${prefix}/${p}`.replace(/\/+/g, "/");
  return joined.length > 1 ? joined.replace(/\/$/, "") : joined;
}

/** `/v1/files/:file_id`, `/v1/models/*model_id` -> `/v1/files/{file_id}`, `/v1/models/{model_id}` (OpenAPI's form). */
export function openApiPathOf(expressPath: string): string {
  return expressPath.replace(/[:*](\w+)/g, "{$1}");
}
