import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { releaseVersion } from "../../images/build";
import { IMAGES } from "../../images/deployables";
import { renderOverlay } from "./support/kustomize";
import { isWorkload, podContainers, type K8sObject } from "./support/manifests";
import { releaseTag } from "./support/images";
import { readText } from "./support/repo";

/**
 * One release, one version (CHANGELOG.md): the root package.json's `version` heads the changelog (below
 * what is merged but not released yet, "## Unreleased"), is
 * the default tag of every image docker-bake.hcl builds and the version label the Dockerfile writes,
 * what infra/images/build.ts stamps into each image's package.json, and every tag and release label of
 * the prod overlay (the release as committed).
 */
const SEMVER = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/;

function versionProblems(files: { packageJson: string; changelog: string; bake: string; dockerfile: string }, prod: K8sObject[]): string[] {
  const { version } = JSON.parse(files.packageJson) as { version?: string };
  if (!version || !SEMVER.test(version)) return [`package.json: version ${String(version)} is not a release version`];
  const problems: string[] = [];
  // What is merged but not released yet sits above, under "## Unreleased".
  const heading = /^## (?!Unreleased$)(\S+)/m.exec(files.changelog)?.[1];
  if (heading !== version) problems.push(`CHANGELOG.md: the first entry is ${String(heading)}, not ${version}`);
  const tag = /variable "TAG" \{ default = "([^"]*)" \}/.exec(files.bake)?.[1];
  if (tag !== version) problems.push(`docker-bake.hcl: TAG defaults to ${String(tag)}, not ${version}`);
  for (const arg of files.dockerfile.matchAll(/^ARG VERSION=(.*)$/gm))
    if (arg[1] !== version) problems.push(`Dockerfile: ARG VERSION=${String(arg[1])}, not ${version}`);
  for (const w of prod.filter(isWorkload)) {
    for (const c of podContainers(w).filter((x) => /\/meter\//.test(x.image)))
      if (releaseTag(c.image) !== version) problems.push(`prod ${w.kind} ${w.metadata.name}: runs ${c.image}, not ${version}`);
    const label = w.metadata.labels?.["app.kubernetes.io/version"];
    if (w.kind === "Deployment" && label !== version) problems.push(`prod Deployment ${w.metadata.name}: release label ${String(label)}, not ${version}`);
  }
  return problems;
}

const files = {
  packageJson: readText("package.json"),
  changelog: readText("CHANGELOG.md"),
  bake: readText("docker-bake.hcl"),
  dockerfile: readText("Dockerfile"),
};
const prod = renderOverlay("prod");

it("gives package.json, CHANGELOG.md, the image builds and the prod overlays one version", () => {
  expect(versionProblems(files, prod)).toEqual([]);
  expect(versionProblems(files, renderOverlay("prod-ha"))).toEqual([]);
  expect(releaseVersion()).toBe((JSON.parse(files.packageJson) as { version: string }).version);
  const images = prod.filter(isWorkload).flatMap((w) => podContainers(w).map((c) => c.image));
  for (const image of IMAGES) expect(images).toContain(`registry.example.com/meter/${image.deployable}:${releaseVersion()}`);
});

it("has a changelog entry for this release (and for what is unreleased) listing its migrations, its signing schemes and its upgrade steps", () => {
  const entries = files.changelog.split(/^## /m).slice(1);
  const wanted = entries.slice(0, entries[0]!.startsWith("Unreleased\n") ? 2 : 1);
  for (const entry of wanted) {
    expect(entry).toMatch(/^### Migrations$/m);
    expect(entry).toMatch(/^### Signing schemes$/m);
    expect(entry).toMatch(/^### Upgrade steps$/m);
  }
});

describe("the check fails on", () => {
  const bump = (text: string) => text.replace(/"version": "[^"]+"/, '"version": "9.9.9"');
  it.each([
    [
      "a version bumped in package.json alone",
      { ...files, packageJson: bump(files.packageJson) },
      /CHANGELOG\.md: the first entry is \S+, not 9\.9\.9[\s\S]*docker-bake/,
    ],
    ["no version", { ...files, packageJson: files.packageJson.replace(/\s*"version": "[^"]+",/, "") }, /package\.json: version undefined/],
    ["images built with another tag", { ...files, bake: files.bake.replace(/(variable "TAG" \{ default = )"[^"]*"/, '$1"dev"') }, /TAG defaults to dev/],
  ])("%s", (_name, changed, expected) => {
    expect(versionProblems(changed, prod).join("\n")).toMatch(expected);
  });

  it("one deployable of the prod overlay left at another tag", () => {
    const objects = renderOverlay("prod", (k8s) => {
      const file = path.join(k8s, "overlays/prod/kustomization.yaml");
      writeFileSync(file, readFileSync(file, "utf8").replace(/(name: meter-mcp\n\s+newName: \S+\n\s+newTag:) "[^"]+"/, '$1 "0.9.0"'));
    });
    expect(versionProblems(files, objects).join("\n")).toMatch(/prod Deployment mcp: runs \S+mcp:0\.9\.0/);
  });
});
