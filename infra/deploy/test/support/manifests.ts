import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { existsInRepo, isRecord, readYaml, readYamlDocuments, repoPath } from "./repo";

/** The slice of the Kubernetes API these manifests use. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string; optional?: boolean };
    configMapKeyRef?: { name: string; key: string; optional?: boolean };
  };
}

export interface EnvFrom {
  configMapRef?: { name: string; optional?: boolean };
  secretRef?: { name: string; optional?: boolean };
}

export interface Probe {
  httpGet?: { path: string; port: number | string };
  exec?: { command: string[] };
  tcpSocket?: { port: number | string };
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: EnvVar[];
  envFrom?: EnvFrom[];
  startupProbe?: Probe;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: { runAsNonRoot?: boolean; allowPrivilegeEscalation?: boolean };
  volumeMounts?: { name: string; mountPath: string }[];
}

export interface Volume {
  name: string;
  configMap?: { name: string };
  secret?: { secretName: string };
}

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  securityContext?: { runAsNonRoot?: boolean };
  volumes?: Volume[];
}

/** Deployment, StatefulSet or Job. */
export interface Workload extends K8sObject {
  spec: {
    selector?: { matchLabels?: Record<string, string> };
    serviceName?: string;
    template: { metadata?: { labels?: Record<string, string> }; spec: PodSpec };
    volumeClaimTemplates?: { metadata: { name: string } }[];
  };
}

export interface Service extends K8sObject {
  spec: { selector?: Record<string, string>; ports: { name?: string; port: number; targetPort?: number | string }[] };
}

export interface ConfigMap extends K8sObject {
  data?: Record<string, string>;
}

export interface Secret extends K8sObject {
  stringData?: Record<string, string>;
  data?: Record<string, string>;
}

export interface Kustomization {
  namespace?: string;
  resources?: string[];
  images?: { name: string; newName?: string; newTag?: string }[];
}

/** A folder with a kustomization.yaml: what it lists, and the example Secrets beside it (not listed). */
export interface ManifestFolder {
  dir: string;
  kustomization: Kustomization;
  /** Every YAML file of the folder (not of subfolders), kustomization.yaml aside. */
  files: string[];
  /** The objects of the listed resources, with the file they come from. */
  objects: { file: string; object: K8sObject }[];
  examples: { file: string; object: K8sObject }[];
}

export const WORKLOAD_KINDS = new Set(["Deployment", "StatefulSet", "Job"]);
export const EXAMPLE_FILE = /\.example\.ya?ml$/;

function objectsOf(relative: string): { file: string; object: K8sObject }[] {
  return readYamlDocuments(relative)
    .filter((doc) => doc !== null && doc !== undefined)
    .map((doc) => {
      if (!isRecord(doc) || typeof doc.kind !== "string" || !isRecord(doc.metadata)) throw new Error(`${relative}: not a Kubernetes object`);
      return { file: relative, object: doc as unknown as K8sObject };
    });
}

export function loadFolder(dir: string): ManifestFolder {
  const kustomization = readYaml(`${dir}/kustomization.yaml`) as Kustomization;
  const files = readdirSync(repoPath(dir))
    .filter((name) => /\.ya?ml$/.test(name) && name !== "kustomization.yaml" && statSync(repoPath(dir, name)).isFile())
    .sort();
  const listed = (kustomization.resources ?? []).filter((r) => existsInRepo(path.posix.join(dir, r)) && /\.ya?ml$/.test(r));
  return {
    dir,
    kustomization,
    files,
    objects: listed.flatMap((r) => objectsOf(path.posix.join(dir, r))),
    examples: files.filter((f) => EXAMPLE_FILE.test(f)).flatMap((f) => objectsOf(path.posix.join(dir, f))),
  };
}

/** k8s/ and the folders under it that have their own kustomization.yaml (dev-dependencies). */
export function loadManifests(root = "k8s"): ManifestFolder[] {
  const subfolders = readdirSync(repoPath(root), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsInRepo(`${root}/${entry.name}/kustomization.yaml`))
    .map((entry) => `${root}/${entry.name}`);
  return [root, ...subfolders.sort()].map(loadFolder);
}

export const isWorkload = (o: K8sObject): o is Workload => WORKLOAD_KINDS.has(o.kind);
export const isService = (o: K8sObject): o is Service => o.kind === "Service";
export const isConfigMap = (o: K8sObject): o is ConfigMap => o.kind === "ConfigMap";
export const isSecret = (o: K8sObject): o is Secret => o.kind === "Secret";

/** A Secret's values as the pods see them (stringData wins over base64 data, as in the API). */
export function secretValues(secret: Secret): Record<string, string> {
  const decoded = Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]));
  return { ...decoded, ...(secret.stringData ?? {}) };
}

export const matches = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean =>
  selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels?.[k] === v);
