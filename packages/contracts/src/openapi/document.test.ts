import type { z } from "zod";
import { buildOpenApiDocument, OPERATION_GROUPS } from "./document";
import type { Answer } from "./operation";

/**
 * The document names a schema for every JSON success answer of the operator's API and the web
 * cabinet's (docs/api.md, Account cabinet and The web cabinet), so a client can be generated from it;
 * gateway/test/openapi.test.ts validates the whole document.
 */
type Responses = Record<string, { content?: Record<string, { schema?: unknown }> }>;
const doc = buildOpenApiDocument();

function successesWithoutSchema(paths: typeof doc.paths): string[] {
  return Object.entries(paths)
    .filter(([p]) => p.startsWith("/admin/") || p.startsWith("/cabinet/api/"))
    .flatMap(([p, methods]) =>
      Object.entries(methods).flatMap(([method, op]) =>
        Object.entries((op as { responses: Responses }).responses)
          .filter(([status, r]) => /^2\d\d$/.test(status) && status !== "204" && !Object.values(r.content ?? {}).some((c) => c.schema !== undefined))
          .map(([status]) => `${method.toUpperCase()} ${p} ${status}`),
      ),
    );
}

it("gives every success answer of /admin/v1 and /cabinet/api a schema", () => {
  expect(successesWithoutSchema(doc.paths)).toEqual([]);
});

it("fails on an answer without one (the check can fail)", () => {
  const broken = JSON.parse(JSON.stringify(doc.paths)) as typeof doc.paths;
  delete (broken["/admin/v1/keys"]!.get as { responses: Responses }).responses["200"]!.content;
  expect(successesWithoutSchema(broken)).toEqual(["GET /admin/v1/keys 200"]);
});

it("gives one schema to each component name (the first would silently win)", () => {
  const byName = new Map<string, Set<z.ZodType>>();
  for (const group of OPERATION_GROUPS)
    for (const op of Object.values(group)) {
      const bodies = [op.request, ...Object.values(op.answers as Record<string, Answer>).map((a) => a.body)];
      for (const b of bodies) if (b && "schema" in b) byName.set(b.name, (byName.get(b.name) ?? new Set()).add(b.schema));
    }
  expect([...byName].filter(([, schemas]) => schemas.size > 1).map(([name]) => name)).toEqual([]);
});
