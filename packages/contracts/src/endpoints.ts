import type { z } from "zod";

/**
 * An internal HTTP endpoint: its method and Express-style path beside the schemas of what it takes
 * and answers. The serving router mounts `path`; the client fills it with `pathOf` and validates the
 * answer with `response`, so the two sides cannot drift apart.
 */
export interface Endpoint<Req extends z.ZodType | undefined = z.ZodType | undefined, Res extends z.ZodType | undefined = z.ZodType | undefined> {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  request: Req;
  response: Res;
}

export function endpoint<const M extends Endpoint["method"], Req extends z.ZodType | undefined, Res extends z.ZodType | undefined>(
  method: M,
  path: string,
  request: Req,
  response: Res,
): Endpoint<Req, Res> & { method: M } {
  return { method, path, request, response };
}

/** `/internal/v1/holds/:id` with `{id}` -> `/internal/v1/holds/<id>` (each value URI-encoded), plus a query. */
export function pathOf(e: Pick<Endpoint, "path">, params: Record<string, string> = {}, query?: Record<string, string>): string {
  const path = e.path.replace(/:([A-Za-z_]+)/g, (_m, name: string) => {
    const v = params[name];
    if (v === undefined) throw new Error(`${e.path}: no value for :${name}`);
    return encodeURIComponent(v);
  });
  return query && Object.keys(query).length ? `${path}?${new URLSearchParams(query)}` : path;
}
