import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { repoRoot } from "@meter/local-infra";

export const ROOT = repoRoot();

export const repoPath = (...parts: string[]): string => path.join(ROOT, ...parts);

export const readText = (relative: string): string => readFileSync(repoPath(relative), "utf8");

export const existsInRepo = (relative: string): boolean => existsSync(repoPath(relative));

/** Every YAML document of a file. `merge`: docker compose resolves `<<: *anchor` merge keys. */
export function readYamlDocuments(relative: string): unknown[] {
  return YAML.parseAllDocuments(readText(relative), { merge: true }).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${relative}: ${doc.errors.map((e) => e.message).join("; ")}`);
    return doc.toJS() as unknown;
  });
}

export function readYaml(relative: string): unknown {
  const [first, ...rest] = readYamlDocuments(relative);
  if (rest.length > 0) throw new Error(`${relative}: one YAML document expected`);
  return first;
}

/**
 * The process entry points of the checkout, as deployment commands name them (relative to the
 * image's working directory, the repository root): `gateway/src/main.ts` and each service's
 * `src/main.ts` (an HTTP server) and `src/worker.ts` (a queue worker). A service added later shows up
 * here, and the tests then ask for its deployment.
 */
export function entryPoints(): string[] {
  const serviceDirs = readdirSync(repoPath("services"), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `services/${entry.name}`);
  return ["gateway", ...serviceDirs]
    .flatMap((dir) => [`${dir}/src/main.ts`, `${dir}/src/worker.ts`])
    .filter(existsInRepo)
    .sort();
}

export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
