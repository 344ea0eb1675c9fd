import path from "node:path";
import { CLAMAV_DIR, clamdConf } from "./support/clamd";
import { asList, loadCompose } from "./support/compose-file";
import { componentOfImage, configModuleOf } from "./support/components";
import { copyParts, parseDockerfile } from "./support/dockerfile";
import { checkClamdImage, checkMeterDockerfile } from "./support/image-checks";
import { renderOverlay } from "./support/kustomize";
import { isWorkload, podContainers } from "./support/manifests";
import { entryPoints, readText } from "./support/repo";
import { IMAGES } from "../../images/deployables";

/** The files worker's idea of clamd's stream limit (its default: no deployment file overrides it). */
async function clamdStreamMaxBytes(): Promise<number> {
  const files = await configModuleOf(componentOfImage("meter-files-worker")!);
  return files.loadConfig({ INTERNAL_SIGNING_KEY: "x".repeat(40), INTERNAL_PUBLIC_KEYS: "x".repeat(40) }).CLAMD_STREAM_MAX_BYTES as number;
}

it("has an image for every process of the checkout (each src/main.ts and src/worker.ts)", () => {
  expect(IMAGES.map((i) => `${i.dir}/${i.entry}`).sort()).toEqual(entryPoints());
});

describe("Dockerfile (one image per deployable)", () => {
  const dockerfile = readText("Dockerfile");
  const ignore = readText(".dockerignore");

  it("builds each deployable's target from the lockfile, with only its production code and packages, non-root under tini, labelled", () => {
    expect(checkMeterDockerfile(dockerfile, ignore)).toEqual([]);
  });

  it("runs on Node 24 LTS, the release the two commands run on, pinned by the official image's digest", () => {
    const nodeImage = /^ARG NODE_IMAGE=(.*)$/m.exec(dockerfile)?.[1];
    const { nodeRuntime } = JSON.parse(readText("package.json")) as { nodeRuntime: string };
    expect(nodeImage).toMatch(/^node:24\.\d+\.\d+-bookworm-slim@sha256:[0-9a-f]{64}$/);
    expect(nodeImage).toContain(`node:${nodeRuntime}-bookworm-slim@`);
  });

  it.each([
    ["a base by tag only", dockerfile.replace(/^(ARG NODE_IMAGE=node:[^@]+)@.*$/m, "$1"), ignore, /NODE_IMAGE node:24\.\d+\.\d+-bookworm-slim, not .*@sha256/],
    [
      "a Node 20 base (end of life)",
      dockerfile.replace(/^ARG NODE_IMAGE=node:[^@]+/m, "ARG NODE_IMAGE=node:20.20.2-bookworm-slim"),
      ignore,
      /NODE_IMAGE is Node 20\.20\.2, package\.json's nodeRuntime is 24\./,
    ],
    ["another pnpm", dockerfile.replace(/PNPM_VERSION=\S+/, "PNPM_VERSION=9.0.0"), ignore, /installs pnpm 9\.0\.0/],
    ["a missing target", dockerfile.replace("AS mcp", "AS mcp-server"), ignore, /no target mcp/],
    [
      "root at run time",
      dockerfile.replace(/^USER 1000:1000\nENTRYPOINT/m, "USER root\nENTRYPOINT"),
      ignore,
      /target text: USER root is not a numeric non-root user/,
    ],
    ["no init", dockerfile.replace(/^ENTRYPOINT .*$/m, ""), ignore, /target gateway: no init \(tini\) as PID 1/],
    ["the worker without Tesseract", dockerfile.replace(" tesseract-ocr-rus", ""), ignore, /target media-jobs-worker: does not install tesseract-ocr-rus/],
    [
      "the whole tree before the fetch",
      dockerfile.replace("COPY pnpm-lock.yaml pnpm-workspace.yaml .npmrc ./", "COPY . ."),
      ignore,
      /copies more than the lockfile before fetching/,
    ],
    [
      "code before dependencies",
      dockerfile.replace(
        /(COPY --from=build --link \/out\/text\/node_modules \/app\/node_modules)\n(COPY --from=build --link \/out\/text\/app \/app)/,
        "$2\n$1",
      ),
      ignore,
      /target text: copies its code before its dependencies/,
    ],
    [
      "tsx at run time",
      dockerfile.replace('CMD ["node", "--enable-source-maps", "dist/main.js"]', 'CMD ["node", "--import", "tsx", "services/text/src/main.ts"]'),
      ignore,
      /target gateway: CMD .*tsx/,
    ],
    [
      "no revision label",
      dockerfile.replace(/org\.opencontainers\.image\.revision="\$\{REVISION\}"/, 'org.opencontainers.image.revision="x"'),
      ignore,
      /no org\.opencontainers\.image\.revision label/,
    ],
    ["a .dockerignore that drops a workspace package", dockerfile, `${ignore}\nbench\n`, /leaves out bench\/package\.json/],
    ["a .dockerignore that lets machine secrets in", dockerfile, ignore.replace(/^\.local$/m, ""), /lets \.local\/secrets\.json into the build/],
  ])("fails on %s", (_name, broken, brokenIgnore, expected) => {
    expect(checkMeterDockerfile(broken, brokenIgnore).join("\n")).toMatch(expected);
  });
});

describe("infra/clamav (the clamd image)", () => {
  const dockerfile = readText(`${CLAMAV_DIR}/Dockerfile`);
  const conf = readText(`${CLAMAV_DIR}/clamd.conf`);

  it("loads the project's signatures, listens on every interface in the foreground, with the files service's stream limit", async () => {
    expect(checkClamdImage(dockerfile, conf, await clamdStreamMaxBytes())).toEqual([]);
  });

  it.each([
    ["signatures copied elsewhere", dockerfile.replace("/var/lib/clamav/", "/opt/signatures/"), conf, /not to DatabaseDirectory/],
    ["a clamd that forks", dockerfile, conf.replace("Foreground yes", "Foreground no"), /Foreground yes/],
    ["a clamd on loopback only", dockerfile, conf.replace("TCPAddr 0.0.0.0", "TCPAddr 127.0.0.1"), /TCPAddr 127\.0\.0\.1/],
    ["a stream limit the files service does not know", dockerfile, conf.replace("StreamMaxLength 50M", "StreamMaxLength 25M"), /StreamMaxLength 25M/],
  ])("fails on %s", async (_name, brokenDockerfile, brokenConf, expected) => {
    expect(checkClamdImage(brokenDockerfile, brokenConf, await clamdStreamMaxBytes()).join("\n")).toMatch(expected);
  });

  const installed = (script: string) => {
    const copied = parseDockerfile(dockerfile)
      .filter((i) => i.keyword === "COPY")
      .map((i) => copyParts(i.args))
      .find((c) => c.sources.includes(script));
    return copied && path.posix.basename(copied.dest);
  };
  const clamdContainer = (overlay: "dev" | "prod") => {
    const pods = renderOverlay(overlay)
      .filter(isWorkload)
      .flatMap(podContainers)
      .filter((c) => /meter-clamd|\/clamd:/.test(c.image));
    expect(pods).toHaveLength(1);
    return pods[0]!;
  };

  it("has the healthcheck command that compose and Kubernetes call", () => {
    expect(installed("clamd-ping.sh")).toBe("clamd-ping");
    const composeClamd = Object.values(loadCompose().services).find((s) => typeof s.build === "object" && s.build.context === CLAMAV_DIR);
    expect(asList(composeClamd?.healthcheck?.test)).toEqual(["CMD", "clamd-ping"]);
    const dev = clamdContainer("dev");
    for (const probe of [dev.startupProbe, dev.readinessProbe, dev.livenessProbe]) expect(probe?.exec?.command).toEqual(["clamd-ping"]);
  });

  it("has the readiness command of production, which takes no scans without current official signatures", () => {
    expect(installed("clamd-ready.sh")).toBe("clamd-ready");
    const prod = clamdContainer("prod");
    expect(prod.readinessProbe?.exec?.command).toEqual(["clamd-ready", clamdConf().get("DatabaseDirectory"), "48"]);
    for (const probe of [prod.startupProbe, prod.livenessProbe]) expect(probe?.exec?.command).toEqual(["clamd-ping"]);
  });
});
