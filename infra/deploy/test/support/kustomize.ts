import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import YAML from "yaml";
import type { K8sObject } from "./manifests";
import { isRecord, repoPath } from "./repo";

/** The environments of k8s/overlays: each renders the whole system. */
export const OVERLAYS = ["dev", "prod"] as const;
export type Overlay = (typeof OVERLAYS)[number];

/**
 * `kubectl kustomize k8s/overlays/<overlay>` as an operator would run it: on a copy of k8s/ whose
 * overlays' secrets/ folders (never committed) are filled from their secrets.example/ (or by `secrets`,
 * given the overlay's folder and its secrets/ to write). `edit` may change the copy first (a test's
 * broken file, or a new image tag).
 */
export function renderOverlay(overlay: Overlay, edit?: (k8sDir: string) => void, secrets?: (overlayDir: string, target: string) => void): K8sObject[] {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "meter-k8s-"));
  try {
    const k8s = path.join(tmp, "k8s");
    cpSync(repoPath("k8s"), k8s, { recursive: true, filter: (f) => path.basename(f) !== "secrets" });
    for (const o of OVERLAYS) {
      const dir = path.join(k8s, "overlays", o);
      if (secrets) secrets(dir, path.join(dir, "secrets"));
      else for (const file of readdirSync(path.join(dir, "secrets.example"))) cpSync(path.join(dir, "secrets.example", file), path.join(dir, "secrets", file));
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
