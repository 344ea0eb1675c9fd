import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { envPrefix } from "@meter/contracts";
import { repoRoot } from "@meter/local-infra";
import { bundle } from "./bundle";
import { IMAGES, imageOf, type DeployableImage } from "./deployables";
import { findPackageDir, PackageClosure, readManifest, type ClosureRoot, type PartialPackage } from "./package-closure";

/**
 * `tsx infra/images/build.ts [--out DIR] <deployable...|--all>`: for each deployable, the folder its
 * image copies (the Dockerfile's build stage runs this after a frozen install and `pnpm db generate`):
 *
 *   DIR/<deployable>/node_modules   production dependencies only (one layer: it changes with the lockfile)
 *   DIR/<deployable>/app/dist       main.js or worker.js, and migrate.js where the service has a database
 *   DIR/<deployable>/app/...        files read at run time, at their repository paths (migrations, cabinet pages)
 *
 * Without Docker, the folder runs as the image would: `cd DIR/text/app && node dist/main.js` (its
 * packages resolve from DIR/text/node_modules; infra/images/test/built-images.test.ts does it for all).
 */
const root = repoRoot();

/** The Prisma CLI is a dependency of db-tools for `generate`; migrations need only its engine files. */
const MIGRATION_ENGINE: PartialPackage[] = [
  { name: "prisma", from: path.join(root, "packages/db-tools"), files: ["package.json", "build/schema_engine_bg.wasm"] },
];
const NOT_AT_RUN_TIME = new Set(["prisma"]);

function migrationEngineFiles(): PartialPackage[] {
  const prisma = findPackageDir("prisma", path.join(root, "packages/db-tools"));
  if (!prisma) throw new Error("prisma is not installed (a dependency of @meter/db-tools)");
  const engines = findPackageDir("@prisma/engines", prisma);
  if (!engines) throw new Error("@prisma/engines is not installed");
  // The engine checks its own version against these manifests (packages/db-tools/src/engine.ts).
  return [
    ...MIGRATION_ENGINE,
    { name: "@prisma/engines", from: prisma, files: ["package.json"] },
    { name: "@prisma/engines-version", from: engines, files: ["package.json"] },
  ];
}

/** The workspace package folder a bundled file belongs to. */
function workspacePackageOf(file: string): string {
  for (let dir = path.dirname(file); dir.startsWith(root); dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "package.json"))) return dir;
  }
  throw new Error(`${file} is in no workspace package`);
}

function registryDependencies(packageDir: string): ClosureRoot[] {
  const deps = readManifest(packageDir).dependencies ?? {};
  return Object.entries(deps)
    .filter(([, range]) => !range.startsWith("workspace:"))
    .map(([name]) => ({ name, from: packageDir }));
}

/**
 * The generated entry of `dist/migrate.js`. Its settings pass the production secret checks first
 * (migrationConfig), as the deployable's own process does: a placeholder owner password stops the Job.
 */
function migrateEntry(image: DeployableImage): string {
  return `import path from "node:path";
import { migrationConfig, parseConfig } from "./packages/config/src/index";
import { runMigrationCommand } from "./packages/db-tools/src/service-migrations";
Promise.resolve().then(() => {
  parseConfig(migrationConfig(${JSON.stringify(envPrefix(image.service))}));
  return runMigrationCommand({
    prefix: ${JSON.stringify(envPrefix(image.service))},
    serviceDir: path.join(__dirname, "..", ${JSON.stringify(image.dir)}),
    argv: process.argv.slice(2),
    env: process.env,
  });
}).then(
  (code) => { process.exitCode = code; },
  (error) => { console.error(error instanceof Error ? error.message : error); process.exitCode = 1; },
);
`;
}

/** This checkout's release: the root package.json's `version` (CHANGELOG.md's first entry, the images' tag). */
export function releaseVersion(): string {
  const { version } = readManifest(root) as { version?: string };
  if (!version) throw new Error("package.json has no version");
  return version;
}

export interface BuiltImage {
  deployable: string;
  dir: string;
  packages: number;
}

export async function buildImageFolder(image: DeployableImage, outRoot: string, opts: { link?: boolean } = {}): Promise<BuiltImage> {
  const out = path.join(outRoot, image.deployable);
  rmSync(out, { recursive: true, force: true });
  const dist = path.join(out, "app", "dist");
  mkdirSync(dist, { recursive: true });

  const entryName = path.basename(image.entry, ".ts");
  const bundles = [await bundle({ root, name: entryName, entry: { file: path.join(image.dir, image.entry) }, outDir: dist })];
  if (image.migrations) bundles.push(await bundle({ root, name: "migrate", entry: { contents: migrateEntry(image) }, outDir: dist }));

  const workspacePackages = new Set(bundles.flatMap((b) => b.inputs.map(workspacePackageOf)));
  const sourcePackages = image.sourcePackages.map((name) => {
    const dir = findPackageDir(name, path.join(root, image.dir));
    if (!dir) throw new Error(`${name} is not a dependency of ${image.dir}`);
    return { name, dir };
  });
  const closure = new PackageClosure(NOT_AT_RUN_TIME);
  closure.add([...workspacePackages, ...sourcePackages.map((p) => p.dir)].flatMap(registryDependencies));

  // What the bundle requires must be what its importer was built against, at the top level.
  for (const { importer, specifier } of bundles.flatMap((b) => b.externals)) {
    const name = specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!;
    const wanted = findPackageDir(name, path.dirname(importer));
    const shipped = closure.topLevel(name);
    if (NOT_AT_RUN_TIME.has(name)) continue;
    if (!wanted || wanted !== shipped) {
      throw new Error(
        `${path.relative(root, importer)} imports ${specifier}: ${shipped ? "another version is at the top of node_modules" : "no bundled package declares it"}`,
      );
    }
  }
  const packages = closure.copyTo(out, image.migrations ? migrationEngineFiles() : [], { link: opts.link ?? false });

  for (const file of image.files) cpSync(path.join(root, file), path.join(out, "app", file), { recursive: true });
  for (const { name, dir } of sourcePackages) {
    cpSync(dir, path.join(out, "node_modules", name), { recursive: true, filter: (f) => !/(\/node_modules|\.test\.ts$)/.test(path.relative(dir, f)) });
  }
  // No "type": the bundles are CommonJS. The version is the release the image is tagged with.
  const manifest = { name: `meter-${image.deployable}`, version: releaseVersion(), private: true };
  writeFileSync(path.join(out, "app", "package.json"), JSON.stringify(manifest, null, 2) + "\n");
  return { deployable: image.deployable, dir: out, packages };
}

async function main(argv: string[]): Promise<void> {
  const outAt = argv.indexOf("--out");
  const outRoot = path.resolve(outAt >= 0 ? argv[outAt + 1]! : path.join(root, "dist", "images"));
  const names = argv.filter((a, i) => !a.startsWith("--") && i !== outAt + 1);
  const images = argv.includes("--all") ? IMAGES : names.map(imageOf);
  if (images.length === 0) throw new Error("usage: build.ts [--out DIR] <deployable...|--all>");
  for (const image of images) {
    const started = Date.now();
    const built = await buildImageFolder(image, outRoot);
    console.log(`${built.deployable}: ${path.relative(process.cwd(), built.dir)} (${built.packages} packages, ${Date.now() - started} ms)`);
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
  });
}
