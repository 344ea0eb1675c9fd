/**
 * `pnpm --filter @meter/media-jobs catalog:capabilities`: writes each built-in media model's capabilities
 * (settings schema, file types, limits) from the registry into the catalog seed, infra/catalog/models.json,
 * for every local entry whose provider names a registry model with a tariff for its operation. Run it
 * after changing a model's settings or limits; src/services/model-capabilities.test.ts fails until then.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { repoRoot } from "@meter/local-infra";
import { seedWithCapabilities } from "../services/catalog-seed";

// A tool of the checkout (it rewrites a file of the repository), never bundled into an image: the dev
// package's repoRoot() is the one way the repository root is found.
const file = path.join(repoRoot(), "infra/catalog/models.json");
const seed = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
writeFileSync(file, `${JSON.stringify(seedWithCapabilities(seed), null, 2)}\n`);
console.log(`capabilities written to ${path.relative(process.cwd(), file)}`);
