import { copyFileSync, cpSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, symlinkSync } from "node:fs";
import path from "node:path";

/**
 * The production node_modules of one image, copied from the installed workspace: the closure of the
 * `dependencies` (and installed `optionalDependencies`, such as the native binary of the build
 * platform) of the workspace packages in the bundle, plus the peers a package requires. Optional peers
 * are left out: that is what keeps the Prisma CLI, Prisma Studio and TypeScript (optional peers of
 * @prisma/client) out of the images, which `pnpm deploy --prod` copies in from the lockfile.
 *
 * The layout is the flat one npm makes: a package goes to the top level unless another version is
 * there already, in which case it is nested under the package that needs it. Versions are the ones the
 * lockfile installed; nothing is resolved again.
 */
export interface ClosureRoot {
  name: string;
  /** The folder of the package that declares it (resolution starts there, as Node's does). */
  from: string;
}

/** A package copied only in part (the migration engine's files from the Prisma CLI package). */
export interface PartialPackage extends ClosureRoot {
  files: string[];
}

interface Manifest {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

export const readManifest = (dir: string): Manifest => JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as Manifest;

/** Node's lookup of a package folder: `node_modules/<name>` in `from` or a folder above it. */
export function findPackageDir(name: string, from: string): string | undefined {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "node_modules", name);
    if (existsSync(path.join(candidate, "package.json"))) return realpathSync(candidate);
    if (path.dirname(dir) === dir) return undefined;
  }
}

/** Never loaded at run time: types and source maps of the published packages. */
const SKIPPED_FILE = /\.(d\.ts|d\.mts|d\.cts|map)$/;

/**
 * Files of published packages these images never load, by package (paths relative to the package).
 * Checked by running every built image's processes here (docs/deploy.md).
 */
const UNUSED_FILES: Record<string, RegExp> = {
  // Every schema is PostgreSQL: the query compilers of the other databases are two thirds of the package.
  "@prisma/client": /^runtime\/query_compiler_\w+_bg\.(cockroachdb|mysql|sqlite|sqlserver)\./,
  // Only its JS glue is used, with the engine build of the Prisma CLI (packages/db-tools/src/engine.ts).
  "@prisma/schema-engine-wasm": /^schema_engine_bg\.wasm$/,
};

export class PackageClosure {
  /** Output path (relative, `node_modules/a/node_modules/b`) -> the installed folder copied there. */
  private readonly placed = new Map<string, string>();

  constructor(private readonly skip: ReadonlySet<string> = new Set()) {}

  /** Adds each root and everything it needs. */
  add(roots: readonly ClosureRoot[]): void {
    const queue: { name: string; from: string; parent: string; optional: boolean }[] = roots.map((r) => ({ ...r, parent: "", optional: false }));
    while (queue.length > 0) {
      const { name, from, parent, optional } = queue.shift()!;
      if (this.skip.has(name)) continue;
      const source = findPackageDir(name, from);
      if (!source) {
        if (optional) continue;
        throw new Error(`${name}, needed from ${from}, is not installed`);
      }
      const at = this.place(name, source, parent);
      if (!at) continue;
      const manifest = readManifest(source);
      const optionalPeer = (dep: string) => manifest.peerDependenciesMeta?.[dep]?.optional === true;
      for (const dep of Object.keys(manifest.dependencies ?? {})) queue.push({ name: dep, from: source, parent: at, optional: false });
      for (const dep of Object.keys(manifest.optionalDependencies ?? {})) queue.push({ name: dep, from: source, parent: at, optional: true });
      for (const dep of Object.keys(manifest.peerDependencies ?? {})) {
        if (!optionalPeer(dep)) queue.push({ name: dep, from: source, parent: at, optional: true });
      }
    }
  }

  /** The packages `require(name)` finds from the image's /app/dist: the top level. */
  topLevel(name: string): string | undefined {
    return this.placed.get(path.posix.join("node_modules", name));
  }

  /**
   * Where `name` (installed at `source`) goes for the package placed at `parent`; undefined when the
   * same folder is visible from there already.
   */
  private place(name: string, source: string, parent: string): string | undefined {
    for (let dir = parent; ; dir = path.posix.dirname(path.posix.dirname(dir))) {
      const visible = this.placed.get(path.posix.join(dir, "node_modules", name));
      if (visible === source) return undefined;
      if (visible !== undefined) {
        const nested = path.posix.join(parent, "node_modules", name);
        this.placed.set(nested, source);
        return nested;
      }
      if (dir === "" || dir === ".") break;
    }
    const top = path.posix.join("node_modules", name);
    this.placed.set(top, source);
    return top;
  }

  /**
   * Copies the packages, and the partial ones, under `outDir`. Returns how many packages were copied.
   * `link`: hard links instead of copies, where the file system allows (the tests build every image on
   * each run; a Docker build copies).
   */
  copyTo(outDir: string, partial: readonly PartialPackage[] = [], { link = false }: { link?: boolean } = {}): number {
    for (const [at, source] of [...this.placed.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      const unused = UNUSED_FILES[readManifest(source).name];
      copyTree(source, path.join(outDir, at), link, (file) => {
        const relative = path.relative(source, file).split(path.sep).join("/");
        // A package's own node_modules (pnpm's links to its dependencies) is replaced by the layout above.
        return !SKIPPED_FILE.test(file) && !relative.split("/").includes("node_modules") && !unused?.test(relative);
      });
    }
    for (const p of partial) {
      const source = findPackageDir(p.name, p.from);
      if (!source) throw new Error(`${p.name}, needed from ${p.from}, is not installed`);
      for (const file of p.files) {
        const target = path.join(outDir, "node_modules", p.name, file);
        mkdirSync(path.dirname(target), { recursive: true });
        cpSync(path.join(source, file), target);
      }
    }
    return this.placed.size;
  }
}

function copyTree(source: string, target: string, link: boolean, keep: (file: string) => boolean): void {
  if (!link) {
    cpSync(source, target, { recursive: true, filter: keep });
    return;
  }
  mkdirSync(target, { recursive: true });
  for (const entry of readdirSync(source, { withFileTypes: true })) {
    const from = path.join(source, entry.name);
    const to = path.join(target, entry.name);
    if (!keep(from)) continue;
    if (entry.isDirectory()) copyTree(from, to, link, keep);
    else if (entry.isSymbolicLink()) symlinkSync(readlinkSync(from), to);
    else {
      try {
        linkSync(from, to);
      } catch {
        // Another file system, or no hard links there.
        copyFileSync(from, to);
      }
    }
  }
}
