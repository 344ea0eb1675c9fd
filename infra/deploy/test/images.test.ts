import path from "node:path";
import { CLAMAV_DIR } from "./support/clamd";
import { asList, loadCompose } from "./support/compose-file";
import { componentOf, configModuleOf } from "./support/components";
import { copyParts, parseDockerfile } from "./support/dockerfile";
import { checkClamdImage, checkMeterDockerfile } from "./support/image-checks";
import { CLAMD_IMAGE } from "./support/k8s-checks";
import { imageName } from "./support/images";
import { isWorkload, loadManifests } from "./support/manifests";
import { readText } from "./support/repo";

/** The files worker's idea of clamd's stream limit (its default: no deployment file overrides it). */
async function clamdStreamMaxBytes(): Promise<number> {
  const files = await configModuleOf(componentOf(["node", "--import", "tsx", "services/files/src/worker.ts"])!);
  return files.loadConfig({ INTERNAL_SECRET: "0123456789abcdef" }).CLAMD_STREAM_MAX_BYTES as number;
}

describe("Dockerfile (the Meter image)", () => {
  const dockerfile = readText("Dockerfile");
  const ignore = readText(".dockerignore");

  it("builds from the lockfile with the pinned tools, keeps what runs the code and leaves machine state out", () => {
    expect(checkMeterDockerfile(dockerfile, ignore)).toEqual([]);
  });

  it.each([
    ["an unpinned base", dockerfile.replace(/^FROM .*$/m, "FROM node:20-bookworm-slim"), ignore, /not one pinned node:20/],
    ["another pnpm", dockerfile.replace(/PNPM_VERSION=\S+/, "PNPM_VERSION=9.0.0"), ignore, /installs pnpm 9\.0\.0/],
    ["NODE_ENV=production before the install", dockerfile.replace("WORKDIR /app", "ENV NODE_ENV=production\nWORKDIR /app"), ignore, /drops the devDependencies/],
    ["root at run time", dockerfile.replace(/^USER .*$/m, "USER root"), ignore, /USER root is not a numeric non-root user/],
    ["a COPY of nothing", dockerfile.replace("COPY . .", "COPY . .\nCOPY infra/nothing.txt /app/"), ignore, /infra\/nothing\.txt: nothing there/],
    ["a .dockerignore that drops a workspace package", dockerfile, `${ignore}\nbench\n`, /leaves out bench\/package\.json/],
    ["a .dockerignore that lets machine secrets in", dockerfile, ignore.replace(/^\.local$/m, ""), /lets \.local\/secrets\.json into the image/],
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
    ["a stream limit the files service does not know", dockerfile, conf.replace("StreamMaxLength 100M", "StreamMaxLength 25M"), /StreamMaxLength 25M/],
  ])("fails on %s", async (_name, brokenDockerfile, brokenConf, expected) => {
    expect(checkClamdImage(brokenDockerfile, brokenConf, await clamdStreamMaxBytes()).join("\n")).toMatch(expected);
  });

  it("has the healthcheck command that compose and Kubernetes call", () => {
    const copied = parseDockerfile(dockerfile)
      .filter((i) => i.keyword === "COPY")
      .map((i) => copyParts(i.args))
      .find((c) => c.sources.includes("clamd-ping.sh"));
    expect(copied?.dest).toBe("/usr/local/bin/clamd-ping");
    const command = path.posix.basename(copied!.dest);

    const composeClamd = Object.values(loadCompose().services).find((s) => typeof s.build === "object" && s.build.context === CLAMAV_DIR);
    expect(asList(composeClamd?.healthcheck?.test)).toEqual(["CMD", command]);

    const pods = loadManifests()
      .flatMap((f) => f.objects.map((o) => o.object))
      .filter(isWorkload)
      .flatMap((w) => w.spec.template.spec.containers)
      .filter((c) => imageName(c.image) === CLAMD_IMAGE);
    expect(pods).toHaveLength(1);
    for (const probe of [pods[0]!.startupProbe, pods[0]!.readinessProbe, pods[0]!.livenessProbe]) expect(probe?.exec?.command).toEqual([command]);
  });
});
