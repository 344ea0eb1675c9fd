import path from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import { build, stop } from "esbuild";

/** One built file, served under `/cabinet/assets/<name>`; the name carries its content's hash. */
export interface CabinetAsset {
  name: string;
  body: Buffer;
  contentType: string;
  /** The same bytes compressed once at build (brotli, gzip); absent where it would not save. */
  encoded: { br?: Buffer; gzip?: Buffer };
}

export interface CabinetBundle {
  /** By file name (e.g. `main-4FJ2K7QX.js`). */
  assets: Map<string, CabinetAsset>;
  /** The one page every cabinet address answers with; it names the hashed script and stylesheet. */
  html: string;
}

export const ASSETS_PATH = "/cabinet/assets/";
const SOURCE = path.resolve(__dirname, "..", "src");

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
};

/**
 * Bundles the pages (Preact, Chart.js and our code) in memory with esbuild: about half a second at the
 * gateway's start, so a clean checkout, `npm start`, the tests and the container image all serve what
 * the source says, with nothing built to commit or to forget. File names are content hashes, so the
 * gateway can let browsers cache them for a year; only the small page itself is always fetched again.
 */
export async function buildCabinet(opts: { minify?: boolean } = {}): Promise<CabinetBundle> {
  const result = await build({
    entryPoints: [path.join(SOURCE, "main.tsx")],
    bundle: true,
    write: false,
    outdir: "/assets",
    entryNames: "[name]-[hash]",
    assetNames: "[name]-[hash]",
    format: "esm",
    target: ["es2022", "chrome110", "firefox110", "safari16"],
    platform: "browser",
    minify: opts.minify ?? true,
    sourcemap: "linked",
    jsx: "automatic",
    jsxImportSource: "preact",
    legalComments: "linked",
    logLevel: "silent",
    define: { "process.env.NODE_ENV": '"production"' },
  });
  // esbuild keeps its native helper process for further builds; the gateway builds once.
  await stop();
  const assets = new Map<string, CabinetAsset>();
  for (const file of result.outputFiles) {
    const name = path.basename(file.path);
    const body = Buffer.from(file.contents);
    assets.set(name, { name, body, contentType: TYPES[path.extname(name)] ?? "application/octet-stream", encoded: precompressed(name, body) });
  }
  const script = [...assets.keys()].find((n) => n.startsWith("main-") && n.endsWith(".js"));
  const style = [...assets.keys()].find((n) => n.startsWith("main-") && n.endsWith(".css"));
  if (!script || !style) throw new Error(`the cabinet's bundle lacks its script or stylesheet (built: ${[...assets.keys()].join(", ")})`);
  return { assets, html: page(ASSETS_PATH + script, ASSETS_PATH + style) };
}

/**
 * Compressed once, here, rather than per request: the script shrinks to under a third, and brotli at
 * quality 10 takes about a quarter of a second once at start (11 takes twice that for 2% less). Source
 * maps, fetched only by developer tools, get gzip only: brotli would take seconds over them.
 */
function precompressed(name: string, body: Buffer): CabinetAsset["encoded"] {
  const encoded: CabinetAsset["encoded"] = {};
  if (body.length < 1024) return encoded;
  const gzip = gzipSync(body, { level: name.endsWith(".map") ? 6 : 9 });
  if (gzip.length < body.length) encoded.gzip = gzip;
  if (name.endsWith(".map")) return encoded;
  const br = brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 10, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
  if (br.length < body.length) encoded.br = br;
  return encoded;
}

function page(script: string, style: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light">
<title>Meter cabinet</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${style}">
<script type="module" src="${script}"></script>
</head>
<body>
<div id="app"><p class="boot">Loading the cabinet…</p></div>
<noscript><p class="boot">The cabinet needs JavaScript.</p></noscript>
</body>
</html>
`;
}
