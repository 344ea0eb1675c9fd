/** The slice of the Kubernetes API the checks read, over the objects kustomize renders. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
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
  lifecycle?: { preStop?: { exec?: { command: string[] }; sleep?: { seconds: number } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    runAsNonRoot?: boolean;
    privileged?: boolean;
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
  };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  /** `Always` on an init container: a sidecar, running beside the pod's containers. */
  restartPolicy?: string;
}

export interface Volume {
  name: string;
  configMap?: { name: string };
  secret?: { secretName: string };
  emptyDir?: { sizeLimit?: string; medium?: string };
}

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
  volumes?: Volume[];
  restartPolicy?: string;
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  terminationGracePeriodSeconds?: number;
  topologySpreadConstraints?: { topologyKey: string; labelSelector?: { matchLabels?: Record<string, string> } }[];
}

/** Deployment, StatefulSet or Job. */
export interface Workload extends K8sObject {
  spec: {
    replicas?: number;
    selector?: { matchLabels?: Record<string, string> };
    serviceName?: string;
    template: { metadata?: { labels?: Record<string, string> }; spec: PodSpec };
    volumeClaimTemplates?: { metadata: { name: string } }[];
    /** A Job's. */
    backoffLimit?: number;
    activeDeadlineSeconds?: number;
    ttlSecondsAfterFinished?: number;
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

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export interface NetworkPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: { cidr: string; except?: string[] };
}

export interface NetworkRule {
  from?: NetworkPeer[];
  to?: NetworkPeer[];
  ports?: { port?: number | string; protocol?: string }[];
}

export interface NetworkPolicy extends K8sObject {
  spec: { podSelector: LabelSelector; policyTypes?: string[]; ingress?: NetworkRule[]; egress?: NetworkRule[] };
}

export interface Autoscaler extends K8sObject {
  spec: {
    scaleTargetRef: { kind: string; name: string };
    minReplicas?: number;
    maxReplicas: number;
    metrics?: { type: string; resource?: { name: string; target: { type: string; averageUtilization?: number; averageValue?: string } } }[];
    behavior?: { scaleUp?: unknown; scaleDown?: { stabilizationWindowSeconds?: number; policies?: unknown[] } };
  };
}

export interface DisruptionBudget extends K8sObject {
  spec: { selector?: LabelSelector; minAvailable?: number | string; maxUnavailable?: number | string };
}

export const WORKLOAD_KINDS = new Set(["Deployment", "StatefulSet", "Job"]);

export const isWorkload = (o: K8sObject): o is Workload => WORKLOAD_KINDS.has(o.kind);
export const isService = (o: K8sObject): o is Service => o.kind === "Service";
export const isConfigMap = (o: K8sObject): o is ConfigMap => o.kind === "ConfigMap";
export const isSecret = (o: K8sObject): o is Secret => o.kind === "Secret";
export const isNetworkPolicy = (o: K8sObject): o is NetworkPolicy => o.kind === "NetworkPolicy";
export const isAutoscaler = (o: K8sObject): o is Autoscaler => o.kind === "HorizontalPodAutoscaler";
export const isDisruptionBudget = (o: K8sObject): o is DisruptionBudget => o.kind === "PodDisruptionBudget";

/** A Secret's values as the pods see them (stringData wins over base64 data, as in the API). */
export function secretValues(secret: Secret): Record<string, string> {
  const decoded = Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]));
  return { ...decoded, ...(secret.stringData ?? {}) };
}

export const matches = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean =>
  selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels?.[k] === v);

/** A label selector of the API (matchLabels and matchExpressions); the empty selector selects everything. */
export function selects(selector: LabelSelector | undefined, labels: Record<string, string> | undefined): boolean {
  if (!selector) return false;
  const l = labels ?? {};
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => l[k] === v);
  const byExpressions = (selector.matchExpressions ?? []).every((e) => {
    switch (e.operator) {
      case "In":
        return e.values?.includes(l[e.key] ?? "\u0000") ?? false;
      case "NotIn":
        return !(e.values?.includes(l[e.key] ?? "\u0000") ?? false);
      case "Exists":
        return e.key in l;
      case "DoesNotExist":
        return !(e.key in l);
      default:
        return false;
    }
  });
  return byLabels && byExpressions;
}

export const podContainers = (w: Workload): Container[] => [...(w.spec.template.spec.initContainers ?? []), ...w.spec.template.spec.containers];
