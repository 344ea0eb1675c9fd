import path from "node:path";
import { listServices } from "@meter/db-tools";
import YAML from "yaml";
import { CLAMAV_DIR, clamdBytes, clamdConf, signatureFiles } from "./clamd";
import { copyParts, dockerIgnored, parseDockerfile, sourceMatches, type Instruction } from "./dockerfile";
import { unpinnedImage } from "./images";
import { entryPoints, readText, ROOT } from "./repo";

const runtimeUser = (instructions: Instruction[]): string | undefined => instructions.filter((i) => i.keyword === "USER").pop()?.args;

/** A numeric, non-root USER (Kubernetes' runAsNonRoot can only verify a number). */
function checkUser(name: string, instructions: Instruction[]): string[] {
  const user = runtimeUser(instructions);
  const uid = user === undefined ? undefined : /^(\d+)(?::\d+)?$/.exec(user)?.[1];
  return uid === undefined || Number(uid) === 0 ? [`${name}: USER ${user ?? "(none)"} is not a numeric non-root user`] : [];
}

/** Every COPY/ADD source exists in the build context and is not left out of it by .dockerignore. */
function checkCopies(name: string, context: string, instructions: Instruction[], ignoreFile: string): string[] {
  const problems: string[] = [];
  for (const { keyword, args } of instructions.filter((i) => i.keyword === "COPY" || i.keyword === "ADD")) {
    const { flags, sources } = copyParts(args);
    if (flags.some((f) => f.startsWith("--from"))) continue;
    for (const source of sources) {
      const found = sourceMatches(context, source);
      if (found.length === 0) problems.push(`${name}: ${keyword} ${source}: nothing there in ${context}`);
      for (const file of found.filter((f) => f !== "." && dockerIgnored(ignoreFile, f))) problems.push(`${name}: ${keyword} ${file}, which .dockerignore leaves out`);
    }
  }
  return problems;
}

/** The workspace folders the lockfile installs (a frozen install fails when one is missing). */
function lockfileImporters(): string[] {
  const lock = YAML.parse(readText("pnpm-lock.yaml")) as { importers?: Record<string, unknown> };
  return Object.keys(lock.importers ?? {});
}

/**
 * The root Dockerfile: the pinned Node 20 and pnpm, the frozen install and client generation, devDependencies
 * kept (tsx runs the code), a non-root user, and a build context that holds what the image needs and
 * nothing that must stay on the machine.
 */
export function checkMeterDockerfile(dockerfile: string, ignoreFile: string): string[] {
  const name = "Dockerfile";
  const instructions = parseDockerfile(dockerfile);
  const problems = [...checkUser(name, instructions), ...checkCopies(name, ".", instructions, ignoreFile)];
  const from = instructions.filter((i) => i.keyword === "FROM").map((i) => i.args);
  if (from.length !== 1 || !/^node:20\.\d+\.\d+-bookworm-slim$/.test(from[0]!)) problems.push(`${name}: FROM ${from.join(", ")}, not one pinned node:20.x.y-bookworm-slim`);

  const packageManager = (JSON.parse(readText("package.json")) as { packageManager: string }).packageManager.replace(/^pnpm@/, "").split("+")[0];
  const pnpmArg = instructions.find((i) => i.keyword === "ARG" && i.args.startsWith("PNPM_VERSION="))?.args.split("=")[1];
  if (pnpmArg !== packageManager) problems.push(`${name}: installs pnpm ${pnpmArg}, package.json pins ${packageManager}`);

  const runs = instructions.map((i, index) => ({ ...i, index })).filter((i) => i.keyword === "RUN");
  const install = runs.find((r) => /pnpm install\b/.test(r.args));
  if (!install) problems.push(`${name}: no pnpm install`);
  else {
    for (const flag of ["--frozen-lockfile", "--config.confirmModulesPurge=false"]) if (!install.args.includes(flag)) problems.push(`${name}: pnpm install without ${flag}`);
    if (/--prod\b|NODE_ENV=production/.test(install.args)) problems.push(`${name}: the install drops devDependencies, which run the code`);
    const productionAt = instructions.findIndex((i) => i.keyword === "ENV" && /NODE_ENV[= ]production/.test(i.args));
    if (productionAt >= 0 && productionAt < install.index) problems.push(`${name}: NODE_ENV=production before pnpm install drops the devDependencies`);
  }
  const generate = runs.find((r) => r.args.includes("pnpm db generate"));
  if (!generate || (install && generate.index < install.index)) problems.push(`${name}: no \`pnpm db generate\` after the install`);

  const needed = [
    "package.json",
    "pnpm-lock.yaml",
    "pnpm-workspace.yaml",
    ".npmrc",
    ...lockfileImporters().map((dir) => path.posix.join(dir, "package.json")),
    ...entryPoints(),
    ...listServices().map((dir) => path.posix.join(path.relative(ROOT, dir), "prisma", "migrations")),
  ];
  for (const file of needed) if (dockerIgnored(ignoreFile, file)) problems.push(`.dockerignore leaves out ${file}, which the image needs`);
  const machineOnly = ["node_modules/tsx/package.json", ".tools/node_modules/.bin/pnpm", ".local/secrets.json", ".env", "services/files/src/generated/prisma/client.ts", ".git/config"];
  for (const file of machineOnly) if (!dockerIgnored(ignoreFile, file)) problems.push(`.dockerignore lets ${file} into the image`);
  return problems;
}

/**
 * infra/clamav/Dockerfile and clamd.conf: a pinned Debian, the project's signatures where clamd reads
 * them, a clamd that stays in the foreground on every interface, with the stream limit the files
 * service assumes.
 */
export function checkClamdImage(dockerfile: string, conf: string, clamdStreamMaxBytes: number): string[] {
  const name = `${CLAMAV_DIR}/Dockerfile`;
  const instructions = parseDockerfile(dockerfile);
  const directives = clamdConf(conf);
  const problems = [...checkUser(name, instructions), ...checkCopies(name, CLAMAV_DIR, instructions, "")];
  const from = instructions.filter((i) => i.keyword === "FROM").map((i) => i.args);
  const unpinned = from.length === 1 ? unpinnedImage(from[0]!) : "not one FROM";
  if (unpinned || !from[0]!.startsWith("debian:bookworm")) problems.push(`${name}: FROM ${from.join(", ")}: ${unpinned ?? "not Debian bookworm"}`);

  const copies = instructions.filter((i) => i.keyword === "COPY").map((i) => copyParts(i.args));
  const databaseDir = directives.get("DatabaseDirectory");
  for (const file of Object.keys(signatureFiles())) {
    const copy = copies.find((c) => c.sources.some((s) => sourceMatches(CLAMAV_DIR, s).includes(file)));
    if (!copy) problems.push(`${name}: does not copy the signature file ${file}`);
    else if (path.posix.normalize(copy.dest).replace(/\/$/, "") !== databaseDir) problems.push(`${name}: copies ${file} to ${copy.dest}, not to DatabaseDirectory ${databaseDir}`);
  }
  const confAt = copies.find((c) => c.sources.includes("clamd.conf"))?.dest;
  const cmd = instructions.filter((i) => i.keyword === "CMD").pop()?.args ?? "";
  if (!confAt || !cmd.includes(`--config-file=${confAt}`)) problems.push(`${name}: CMD does not start clamd with the copied clamd.conf`);

  if (directives.get("Foreground") !== "yes") problems.push("clamd.conf: without `Foreground yes` clamd forks and the container exits");
  if (directives.get("TCPAddr") !== "0.0.0.0") problems.push(`clamd.conf: TCPAddr ${directives.get("TCPAddr")}: the files worker connects from another container`);
  if (clamdBytes(directives.get("StreamMaxLength")) !== clamdStreamMaxBytes) {
    problems.push(`clamd.conf: StreamMaxLength ${directives.get("StreamMaxLength")} is not the files service's CLAMD_STREAM_MAX_BYTES (${clamdStreamMaxBytes})`);
  }
  return problems;
}
