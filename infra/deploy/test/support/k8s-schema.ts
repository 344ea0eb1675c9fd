import type { K8sObject } from "./manifests";
import { isOperatorResource } from "./operators";

/**
 * Every object checked against the Kubernetes API's own schemas, offline: kubernetes-models ships a
 * validator compiled from the OpenAPI definitions of each kind (types, required fields, enums,
 * formats). Those definitions allow unknown fields, as the API server does unless asked for strict
 * field validation, which `kubectl apply` asks for: a misspelt field (`imagePullPolicyy`) is an error
 * there and must be one here. So the walk also records which fields each compiled validator reads: a
 * validator looks at every property its schema declares, so a field no validator read is one the
 * schema does not have. Maps (labels, data, resources) are enumerated by their validators and take any key.
 */
type ModelClass = { prototype: { validate(this: unknown): void } };

const GROUP_MODULES: Record<string, string> = {
  v1: "kubernetes-models/v1",
  "apps/v1": "kubernetes-models/apps/v1",
  "batch/v1": "kubernetes-models/batch/v1",
  "policy/v1": "kubernetes-models/policy/v1",
  "autoscaling/v2": "kubernetes-models/autoscaling/v2",
  "networking.k8s.io/v1": "kubernetes-models/networking.k8s.io/v1",
  "rbac.authorization.k8s.io/v1": "kubernetes-models/rbac.authorization.k8s.io/v1",
};

function modelOf(apiVersion: string, kind: string): ModelClass | undefined {
  const module = GROUP_MODULES[apiVersion];
  if (!module) return undefined;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- one of the modules above, chosen by apiVersion
  const models = require(module) as Record<string, ModelClass | undefined>;
  return models[kind];
}

interface Visit {
  path: string;
  value: object;
  read: Set<string>;
  enumerated: boolean;
}

/** A read-tracking view of `value`: what the validator reads of each object, deep. */
function tracked(value: unknown, path: string, visits: Visit[]): unknown {
  if (value === null || typeof value !== "object") return value;
  const visit: Visit = { path, value, read: new Set(), enumerated: false };
  visits.push(visit);
  const children = new Map<string, unknown>();
  return new Proxy(value, {
    get(target, key, receiver) {
      const got = Reflect.get(target, key, receiver) as unknown;
      if (typeof key !== "string") return got;
      visit.read.add(key);
      if (got === null || typeof got !== "object") return got;
      if (!children.has(key)) children.set(key, tracked(got, `${path}.${key}`, visits));
      return children.get(key);
    },
    ownKeys(target) {
      visit.enumerated = true;
      return Reflect.ownKeys(target);
    },
  });
}

/** Problems of one object, each prefixed with its kind and name; empty when the API would accept it. */
export function schemaProblems(object: K8sObject): string[] {
  const where = `${object.kind} ${object.metadata?.name ?? "(unnamed)"}`;
  // An operator's resource (prod-ha): its CRD is not here; support/operators.ts and prod-ha.test.ts check what it must say.
  if (isOperatorResource(object)) return [];
  const model = modelOf(object.apiVersion, object.kind);
  if (!model) return [`${where}: no schema for ${object.apiVersion} ${object.kind}`];
  const visits: Visit[] = [];
  const problems: string[] = [];
  const copy = JSON.parse(JSON.stringify(object)) as K8sObject & { data?: Record<string, unknown> };
  // kustomize wraps a Secret's base64 every 76 characters; the API server's decoder skips line breaks.
  if (copy.kind === "Secret" && copy.data) {
    for (const [k, v] of Object.entries(copy.data)) if (typeof v === "string") copy.data[k] = v.replace(/\n/g, "");
  }
  try {
    model.prototype.validate.call(tracked(copy, "", visits));
  } catch (e) {
    problems.push(`${where}: ${(e as Error).message}`);
  }
  for (const visit of visits) {
    if (Array.isArray(visit.value) || visit.enumerated) continue;
    for (const key of Object.keys(visit.value)) {
      if (!visit.read.has(key)) problems.push(`${where}: unknown field ${visit.path.slice(1) ? `${visit.path.slice(1)}.` : ""}${key}`);
    }
  }
  return problems;
}
