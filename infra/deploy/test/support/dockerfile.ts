import { readdirSync } from "node:fs";
import path from "node:path";
import { existsInRepo, repoPath } from "./repo";

export interface Instruction {
  keyword: string;
  args: string;
}

/** Instructions in order; continuation lines joined, comments (and parser directives) dropped. */
export function parseDockerfile(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let pending = "";
  for (const line of text.split("\n")) {
    // Docker drops comment lines even inside a continued instruction.
    if (/^\s*#/.test(line)) continue;
    const continued = /\\\s*$/.test(line);
    pending += `${continued ? line.replace(/\\\s*$/, "") : line} `;
    if (continued) continue;
    const trimmed = pending.trim();
    pending = "";
    if (trimmed === "") continue;
    const [keyword, ...rest] = trimmed.split(/\s+/);
    instructions.push({ keyword: keyword!.toUpperCase(), args: rest.join(" ") });
  }
  return instructions;
}

/** A COPY/ADD: its `--flags`, sources and destination (shell or JSON form). */
export function copyParts(args: string): { flags: string[]; sources: string[]; dest: string } {
  const words = args.trim().startsWith("[") ? (JSON.parse(args) as string[]) : args.split(/\s+/);
  const flags = words.filter((w) => w.startsWith("--"));
  const paths = words.filter((w) => !w.startsWith("--"));
  return { flags, sources: paths.slice(0, -1), dest: paths[paths.length - 1] ?? "" };
}

/** Docker's pattern syntax (Go's filepath.Match plus `**`) as a regular expression over a whole path. */
function patternRegExp(pattern: string): RegExp {
  let source = "";
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === "*" && pattern[i + 1] === "*") {
      i++;
      if (pattern[i + 1] === "/") {
        i++;
        source += "(?:.*/)?";
      } else {
        source += ".*";
      }
    } else if (ch === "*") {
      source += "[^/]*";
    } else if (ch === "?") {
      source += "[^/]";
    } else {
      source += ch.replace(/[.+^${}()|[\]\\]/g, "\\$&");
    }
  }
  return new RegExp(`^${source}$`);
}

/**
 * Whether a .dockerignore leaves a path (relative to the context) out of the build context. A
 * pattern that matches a folder leaves out everything in it; the last matching pattern wins, `!`
 * bringing a path back.
 */
export function dockerIgnored(ignoreFile: string, relative: string): boolean {
  const rules = ignoreFile
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const negated = line.startsWith("!");
      const pattern = path.posix.normalize((negated ? line.slice(1) : line).trim()).replace(/^\/+|\/+$/g, "");
      return { negated, regexp: patternRegExp(pattern) };
    });
  const parts = relative.split("/");
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join("/"));
  let ignored = false;
  for (const rule of rules) {
    if (prefixes.some((prefix) => rule.regexp.test(prefix))) ignored = !rule.negated;
  }
  return ignored;
}

/** The files of `dir` (relative to the repository) that a COPY source, possibly with `*` or `?`, names. */
export function sourceMatches(context: string, source: string): string[] {
  if (!/[*?[]/.test(source)) return existsInRepo(path.posix.join(context, source)) ? [path.posix.normalize(source)] : [];
  const dir = path.posix.dirname(source);
  const regexp = patternRegExp(path.posix.basename(source));
  const full = path.posix.join(context, dir);
  if (!existsInRepo(full)) return [];
  return readdirSync(repoPath(full))
    .filter((name) => regexp.test(name))
    .map((name) => path.posix.join(dir, name));
}
