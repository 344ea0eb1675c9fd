import { existsSync } from "node:fs";
import path from "node:path";

/** The workspace root: the nearest folder above this package that holds pnpm-workspace.yaml. */
export function repoRoot(): string {
  let dir = __dirname;
  for (;;) {
    if (existsSync(path.join(dir, "pnpm-workspace.yaml"))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no pnpm-workspace.yaml above ${__dirname}`);
    dir = parent;
  }
}

/** Machine-local state (gitignored): `<repo>/.local/<name>`. */
export function localStateDir(name: string): string {
  return path.join(repoRoot(), ".local", name);
}

/** The project-owned ClamAV signatures that the local clamd loads. */
export function clamavSignaturesDir(): string {
  return path.join(repoRoot(), "infra", "clamav");
}

/** The clamd image's configuration, which the local clamd runs too (with its own paths). */
export function clamdConfigFile(): string {
  return path.join(repoRoot(), "infra", "clamav", "clamd.conf");
}
