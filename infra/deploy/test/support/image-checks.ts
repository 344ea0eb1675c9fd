import path from "node:path";
import YAML from "yaml";
import { CLAMAV_DIR, clamdBytes, clamdConf, signatureFiles } from "./clamd";
import { copyParts, dockerIgnored, parseDockerfile, sourceMatches, type Instruction } from "./dockerfile";
import { unpinnedImage } from "./images";
import { IMAGES } from "../../../images/deployables";
import { readText } from "./repo";

/** A numeric, non-root USER (Kubernetes' runAsNonRoot can only verify a number). */
function checkUser(name: string, instructions: Instruction[]): string[] {
  const user = instructions.filter((i) => i.keyword === "USER").pop()?.args;
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
      for (const file of found.filter((f) => f !== "." && dockerIgnored(ignoreFile, f)))
        problems.push(`${name}: ${keyword} ${file}, which .dockerignore leaves out`);
    }
  }
  return problems;
}

/** The workspace folders the lockfile installs (a frozen install fails when one is missing). */
function lockfileImporters(): string[] {
  const lock = YAML.parse(readText("pnpm-lock.yaml")) as { importers?: Record<string, unknown> };
  return Object.keys(lock.importers ?? {});
}

/** The stages of a Dockerfile: `FROM <base> AS <name>` and the instructions until the next FROM. */
interface Stage {
  name: string;
  base: string;
  instructions: (Instruction & { index: number })[];
}

function stagesOf(instructions: Instruction[]): Stage[] {
  const stages: Stage[] = [];
  instructions.forEach((i, index) => {
    if (i.keyword === "FROM") {
      const [base, as, name] = i.args.split(/\s+/);
      stages.push({ name: as?.toUpperCase() === "AS" ? name! : String(stages.length), base: base!, instructions: [] });
    } else stages.at(-1)?.instructions.push({ ...i, index });
  });
  return stages;
}

/** The chain of stages a stage builds on, itself first. */
function lineage(stages: Stage[], stage: Stage): Stage[] {
  const chain = [stage];
  for (let s = stages.find((x) => x.name === stage.base); s; s = stages.find((x) => x.name === s!.base)) chain.push(s);
  return chain;
}

const argDefault = (instructions: Instruction[], name: string): string | undefined =>
  instructions.find((i) => i.keyword === "ARG" && i.args.startsWith(`${name}=`))?.args.slice(name.length + 1);

/**
 * The images run the Node the two commands run on (package.json's `nodeRuntime`, an LTS release), on
 * Debian bookworm slim, by the digest of the official image: a tag alone can be rebuilt under us.
 */
function checkNodeImage(name: string, nodeImage: string | undefined): string[] {
  const pkg = JSON.parse(readText("package.json")) as { nodeRuntime: string; engines: { node: string } };
  const runtime = pkg.nodeRuntime;
  const oldest = /^>=(\d+)$/.exec(pkg.engines.node)?.[1];
  if (oldest === undefined || Number(runtime.split(".")[0]) < Number(oldest))
    return [`package.json: nodeRuntime ${runtime} does not satisfy engines.node ${pkg.engines.node}`];
  const pinned = /^node:(\d+\.\d+\.\d+)-bookworm-slim@sha256:[0-9a-f]{64}$/.exec(nodeImage ?? "");
  if (!pinned) return [`${name}: NODE_IMAGE ${String(nodeImage)}, not node:<x.y.z>-bookworm-slim@sha256:<digest>`];
  if (pinned[1] !== runtime) return [`${name}: NODE_IMAGE is Node ${pinned[1]}, package.json's nodeRuntime is ${runtime}`];
  return [];
}

/**
 * The root Dockerfile: a build stage that installs the workspace from the lockfile (the packages in a
 * layer of their own) and makes every deployable's folder with infra/images/build.ts; then one target
 * per deployable, on the digest-pinned Node 24 image with tini as PID 1, as a numeric non-root user, its dependencies
 * copied before its code, started with plain node, labelled with its version and revision. And a
 * build context that holds what the build needs and nothing that must stay on the machine.
 */
export function checkMeterDockerfile(dockerfile: string, ignoreFile: string): string[] {
  const name = "Dockerfile";
  const instructions = parseDockerfile(dockerfile);
  const stages = stagesOf(instructions);
  const problems = checkCopies(name, ".", instructions, ignoreFile);

  problems.push(...checkNodeImage(name, argDefault(instructions, "NODE_IMAGE")));
  for (const s of stages)
    if (s.base !== "${NODE_IMAGE}" && !stages.some((x) => x.name === s.base))
      problems.push(`${name}: stage ${s.name} is FROM ${s.base}, neither NODE_IMAGE nor a stage`);

  const packageManager = (JSON.parse(readText("package.json")) as { packageManager: string }).packageManager.replace(/^pnpm@/, "").split("+")[0];
  const pnpmArg = argDefault(instructions, "PNPM_VERSION");
  if (pnpmArg !== packageManager) problems.push(`${name}: installs pnpm ${pnpmArg}, package.json pins ${packageManager}`);

  const build = stages.find((s) => s.name === "build");
  if (!build) problems.push(`${name}: no build stage`);
  else {
    const at = (pattern: RegExp) => build.instructions.find((i) => pattern.test(`${i.keyword} ${i.args}`))?.index ?? -1;
    const fetch = at(/^RUN .*pnpm fetch\b/);
    const all = at(/^COPY \. \.$/);
    const install = at(/^RUN .*pnpm install\b/);
    const firstCopy = build.instructions.find((i) => i.keyword === "COPY");
    if (!firstCopy || copyParts(firstCopy.args).sources.some((src) => !["pnpm-lock.yaml", "pnpm-workspace.yaml", ".npmrc", "package.json"].includes(src))) {
      problems.push(`${name}: the build stage copies more than the lockfile before fetching the packages: every source change would fetch them again`);
    }
    if (fetch < 0 || all < 0 || fetch > all) problems.push(`${name}: no \`pnpm fetch\` before \`COPY . .\``);
    const installArgs = build.instructions.find((i) => i.index === install)?.args ?? "";
    for (const flag of ["--offline", "--frozen-lockfile"]) if (!installArgs.includes(flag)) problems.push(`${name}: pnpm install without ${flag}`);
    if (!/pnpm db generate[\s\S]*infra\/images\/build\.ts --out \/out --all/.test(installArgs))
      problems.push(`${name}: the build stage does not generate the clients and then run infra/images/build.ts --out /out --all`);
    if (build.instructions.some((i) => i.keyword === "ENV" && /NODE_ENV[= ]production/.test(i.args)))
      problems.push(`${name}: NODE_ENV=production in the build stage drops the devDependencies that build`);
  }

  for (const image of IMAGES) {
    const stage = stages.find((s) => s.name === image.deployable);
    if (!stage) {
      problems.push(`${name}: no target ${image.deployable}`);
      continue;
    }
    const where = `${name}: target ${image.deployable}`;
    const chain = lineage(stages, stage);
    const all = chain.flatMap((s) => s.instructions);
    if (chain.some((s) => s.name === "build")) problems.push(`${where}: builds on the build stage, with its devDependencies`);
    const user = all
      .filter((i) => i.keyword === "USER")
      .sort((a, b) => a.index - b.index)
      .pop()?.args;
    const uid = user === undefined ? undefined : /^(\d+)(?::\d+)?$/.exec(user)?.[1];
    if (uid === undefined || Number(uid) === 0) problems.push(`${where}: USER ${user ?? "(none)"} is not a numeric non-root user`);
    if (!all.some((i) => i.keyword === "ENTRYPOINT" && i.args.includes("tini"))) problems.push(`${where}: no init (tini) as PID 1`);
    if (!all.some((i) => i.keyword === "RUN" && /apt-get install[^&]*\btini\b/.test(i.args))) problems.push(`${where}: does not install tini`);
    for (const pkg of image.aptPackages)
      if (!all.some((i) => i.keyword === "RUN" && new RegExp(`apt-get install[^&]*\\s${pkg}(\\s|$)`).test(i.args)))
        problems.push(`${where}: does not install ${pkg}`);

    const copies = stage.instructions.filter((i) => i.keyword === "COPY").map((i) => ({ ...copyParts(i.args), index: i.index }));
    const deps = copies.find((c) => c.sources.join() === `/out/${image.deployable}/node_modules`);
    const app = copies.find((c) => c.sources.join() === `/out/${image.deployable}/app`);
    if (!deps || !app || deps.dest !== "/app/node_modules" || app.dest !== "/app")
      problems.push(`${where}: does not copy /out/${image.deployable}/node_modules and /out/${image.deployable}/app into /app`);
    else if (deps.index > app.index) problems.push(`${where}: copies its code before its dependencies: every code change would ship the dependencies again`);
    const cmd = stage.instructions.filter((i) => i.keyword === "CMD").pop()?.args;
    const expected = JSON.stringify(["node", "--enable-source-maps", `dist/${path.basename(image.entry, ".ts")}.js`]);
    if (!cmd || JSON.stringify(JSON.parse(cmd)) !== expected) problems.push(`${where}: CMD ${String(cmd)}, not ${expected}`);
    const label = stage.instructions.find((i) => i.keyword === "LABEL");
    for (const key of ["version", "revision"]) {
      if (!label || !new RegExp(`org\\.opencontainers\\.image\\.${key}="\\$\\{${key.toUpperCase()}\\}"`).test(label.args))
        problems.push(`${where}: no org.opencontainers.image.${key} label from the ${key.toUpperCase()} build argument`);
    }
    if (label && copies.some((c) => c.index > label.index)) problems.push(`${where}: labels before its copies: a new version would rebuild every layer`);
  }

  const needed = [
    "package.json",
    "pnpm-lock.yaml",
    "pnpm-workspace.yaml",
    ".npmrc",
    "infra/images/build.ts",
    ...lockfileImporters().map((dir) => path.posix.join(dir, "package.json")),
  ];
  for (const file of needed) if (dockerIgnored(ignoreFile, file)) problems.push(`.dockerignore leaves out ${file}, which the build needs`);
  const machineOnly = [
    "node_modules/tsx/package.json",
    ".tools/node_modules/.bin/pnpm",
    ".tools/node/bin/node",
    ".local/secrets.json",
    ".env",
    "services/files/src/generated/prisma/client.ts",
    ".git/config",
    "k8s/overlays/prod/secrets/text.env",
  ];
  for (const file of machineOnly) if (!dockerIgnored(ignoreFile, file)) problems.push(`.dockerignore lets ${file} into the build`);
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
    else if (path.posix.normalize(copy.dest).replace(/\/$/, "") !== databaseDir)
      problems.push(`${name}: copies ${file} to ${copy.dest}, not to DatabaseDirectory ${databaseDir}`);
  }
  const confAt = copies.find((c) => c.sources.includes("clamd.conf"))?.dest;
  const cmd = instructions.filter((i) => i.keyword === "CMD").pop()?.args ?? "";
  if (!confAt || !cmd.includes(`--config-file=${confAt}`)) problems.push(`${name}: CMD does not start clamd with the copied clamd.conf`);

  if (directives.get("Foreground") !== "yes") problems.push("clamd.conf: without `Foreground yes` clamd forks and the container exits");
  if (directives.get("TCPAddr") !== "0.0.0.0")
    problems.push(`clamd.conf: TCPAddr ${directives.get("TCPAddr")}: the files worker connects from another container`);
  if (clamdBytes(directives.get("StreamMaxLength")) !== clamdStreamMaxBytes) {
    problems.push(
      `clamd.conf: StreamMaxLength ${directives.get("StreamMaxLength")} is not the files service's CLAMD_STREAM_MAX_BYTES (${clamdStreamMaxBytes})`,
    );
  }
  return problems;
}
