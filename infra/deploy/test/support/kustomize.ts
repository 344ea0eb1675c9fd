import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import YAML from "yaml";
import type { K8sObject } from "./manifests";
import { isRecord, repoPath } from "./repo";

/** The environments of k8s/overlays: each renders the whole system. */
export const OVERLAYS = ["dev", "prod", "prod-ha"] as const;
export type Overlay = (typeof OVERLAYS)[number];

/** The overlays a production runs: at least two pods of everything, release tags, official virus signatures. */
export const isProduction = (overlay: Overlay): boolean => overlay !== "dev";

/** Fills an overlay's secrets/ from its secrets.example/ as they are, placeholders and all. */
export function copyExampleSecrets(overlayDir: string, target: string): void {
  mkdirSync(target, { recursive: true });
  for (const file of readdirSync(path.join(overlayDir, "secrets.example"))) cpSync(path.join(overlayDir, "secrets.example", file), path.join(target, file));
}

/**
 * Fills an overlay's secrets/ from its secrets.example/, each `change-me-…` placeholder replaced by a
 * fixed hex value of its own (the same in every file), as an operator's real secrets would be: a
 * deployable in production refuses placeholders (packages/config/src/secrets.ts).
 */
export function standInSecrets(overlayDir: string, target: string): void {
  mkdirSync(target, { recursive: true });
  for (const file of readdirSync(path.join(overlayDir, "secrets.example"))) {
    const text = readFileSync(path.join(overlayDir, "secrets.example", file), "utf8");
    writeFileSync(
      path.join(target, file),
      text.replace(/change-me-[a-z0-9-]+/g, (placeholder) => createHash("sha256").update(placeholder).digest("hex").slice(0, 48)),
    );
  }
}

/** Adds k8s/components/<component> to an overlay's `components:` (in a copy of k8s/), as its docs tell an operator to. */
export function addComponent(k8sDir: string, overlay: Overlay, component: string): void {
  const file = path.join(k8sDir, "overlays", overlay, "kustomization.yaml");
  const doc = YAML.parseDocument(readFileSync(file, "utf8"));
  const components = (doc.get("components") as YAML.YAMLSeq | undefined) ?? doc.createNode([]);
  components.add(`../../components/${component}`);
  doc.set("components", components);
  writeFileSync(file, doc.toString());
}

/**
 * `kubectl kustomize k8s/overlays/<overlay>` as an operator would run it: on a copy of k8s/ whose
 * overlays' secrets/ folders (never committed) are filled by `secrets` (given the overlay's folder and
 * its secrets/ to write; by default standInSecrets). `edit` may change the copy first (a test's broken
 * file, or a new image tag).
 */
export function renderOverlay(
  overlay: Overlay,
  edit?: (k8sDir: string) => void,
  secrets: (overlayDir: string, target: string) => void = standInSecrets,
): K8sObject[] {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "meter-k8s-"));
  try {
    const k8s = path.join(tmp, "k8s");
    cpSync(repoPath("k8s"), k8s, { recursive: true, filter: (f) => path.basename(f) !== "secrets" });
    for (const o of OVERLAYS) {
      const dir = path.join(k8s, "overlays", o);
      secrets(dir, path.join(dir, "secrets"));
    }
    edit?.(k8s);
    const out = execFileSync("kubectl", ["kustomize", path.join(k8s, "overlays", overlay)], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    return YAML.parseAllDocuments(out).map((doc) => {
      const object = doc.toJS() as unknown;
      if (!isRecord(object) || typeof object.kind !== "string") throw new Error(`kustomize rendered something that is not an object: ${String(doc)}`);
      return object as unknown as K8sObject;
    });
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
