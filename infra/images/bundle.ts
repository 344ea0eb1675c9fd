import { readFile } from "node:fs/promises";
import { builtinModules } from "node:module";
import path from "node:path";
import { build, type Metafile, type Plugin } from "esbuild";

/**
 * One deployable's code as plain JavaScript: esbuild bundles its entry with every workspace module it
 * reaches (ours are TypeScript, run by tsx in development), the Prisma clients generated into each
 * service's src/generated included. Packages from the registry stay outside the bundle, loaded by
 * Node from node_modules as published: native addons (sharp, canvas, argon2), files read by path
 * (Prisma's query compiler, pdf.js, the detection models) and ES-module-only packages (file-type,
 * pdfjs-dist, eld) keep working exactly as under tsx. CommonJS output, like tsx runs our code today;
 * `import()` of an ES module stays a native `import()` (Node 24 target).
 */
export interface BundleInput {
  root: string;
  /** Output file name without extension, under `outDir`. */
  name: string;
  /** An entry file, or the source of a generated entry (resolved from the repository root). */
  entry: { file: string } | { contents: string };
  outDir: string;
}

export interface BundleResult {
  /** Files of the repository in the bundle. */
  inputs: string[];
  /** Registry packages the bundle loads at run time, by the file that imports them. */
  externals: { importer: string; specifier: string }[];
}

export async function bundle(input: BundleInput): Promise<BundleResult> {
  const result = await build({
    ...("file" in input.entry
      ? { entryPoints: { [input.name]: path.join(input.root, input.entry.file) } }
      : { stdin: { contents: input.entry.contents, resolveDir: input.root, sourcefile: `${input.name}.ts`, loader: "ts" as const } }),
    ...("file" in input.entry ? { outdir: input.outDir } : { outfile: path.join(input.outDir, `${input.name}.js`) }),
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node24",
    sourcemap: "linked",
    // Sources in the map are repository paths, not the build machine's.
    sourceRoot: "/",
    metafile: true,
    logLevel: "warning",
    // `import(specifier)` with a computed specifier (importEsm) is meant to stay a runtime import.
    logOverride: { "unsupported-dynamic-import": "silent" },
    plugins: [registryPackagesExternal(input.root), keepSourceDirname(input.root)],
  });
  return describeBundle(result.metafile, input.root);
}

const isWorkspacePath = (root: string, file: string): boolean => file.startsWith(root + path.sep) && !file.split(path.sep).includes("node_modules");

/**
 * Bare specifiers that do not resolve into the workspace are registry packages: left as `require` /
 * `import()`. Workspace packages (`@meter/*`, resolved through their node_modules symlinks into the
 * checkout) are bundled.
 */
function registryPackagesExternal(root: string): Plugin {
  return {
    name: "registry-packages-external",
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData === "resolving") return undefined;
        const resolved = await b.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: "resolving" });
        if (resolved.errors.length > 0) return { errors: resolved.errors };
        if (resolved.external || isWorkspacePath(root, resolved.path)) return resolved;
        return { path: args.path, external: true };
      });
    },
  };
}

/**
 * A workspace module that finds files next to itself with `__dirname` (the cabinet's page sources)
 * would see the bundle's folder instead. Each such module gets its own dirname back: the image keeps
 * every file the process reads at the path it has in the repository, relative to /app, while the
 * bundle is /app/dist/<name>.js.
 */
function keepSourceDirname(root: string): Plugin {
  return {
    name: "keep-source-dirname",
    setup(b) {
      b.onLoad({ filter: /\.tsx?$/ }, async (args) => {
        if (!isWorkspacePath(root, args.path)) return undefined;
        const source = await readFile(args.path, "utf8");
        if (!/\b__dirname\b/.test(source)) return undefined;
        const fromDist = path.posix.join("..", path.relative(root, path.dirname(args.path)).split(path.sep).join("/"));
        const contents =
          `const __sourceDirname = require("node:path").join(__dirname, ${JSON.stringify(fromDist)});\n` + source.replace(/\b__dirname\b/g, "__sourceDirname");
        return { contents, loader: args.path.endsWith(".tsx") ? "tsx" : "ts" };
      });
    },
  };
}

function describeBundle(metafile: Metafile, root: string): BundleResult {
  const inputs = Object.keys(metafile.inputs)
    .filter((p) => !p.startsWith("<stdin>"))
    .map((p) => path.resolve(root, p));
  const externals = Object.entries(metafile.inputs).flatMap(([file, info]) =>
    info.imports
      // A type-only import that esbuild dropped unresolved is listed as external too: never a package.
      .filter((i) => i.external && !i.path.startsWith(".") && !i.path.startsWith("node:") && !isBuiltin(i.path))
      .map((i) => ({ importer: file.startsWith("<stdin>") ? root : path.resolve(root, file), specifier: i.path })),
  );
  return { inputs, externals };
}

const BUILTINS = new Set(builtinModules);
const isBuiltin = (specifier: string): boolean => BUILTINS.has(specifier.split("/")[0]!) || BUILTINS.has(specifier);
