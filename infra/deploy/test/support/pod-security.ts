import { isWorkload, podContainers, type K8sObject, type Workload } from "./manifests";

/** Volume types the restricted Pod Security Standard allows. */
const RESTRICTED_VOLUMES = new Set(["name", "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"]);

interface PodSecurity {
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
  volumes?: Record<string, unknown>[];
}
interface ContainerSecurity {
  name: string;
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    privileged?: boolean;
    allowPrivilegeEscalation?: boolean;
    seccompProfile?: { type: string };
    capabilities?: { drop?: string[]; add?: string[] };
  };
}

/**
 * What the `restricted` Pod Security Standard (pod-security.kubernetes.io/enforce: restricted) would
 * refuse in a workload's pods: https://kubernetes.io/docs/concepts/security/pod-security-standards/.
 */
export function restrictedProblems(w: Workload): string[] {
  const where = `${w.kind} ${w.metadata.name}`;
  const pod = w.spec.template.spec as unknown as PodSecurity;
  const problems: string[] = [];
  if (pod.hostNetwork || pod.hostPID || pod.hostIPC) problems.push(`${where}: shares a host namespace`);
  for (const v of pod.volumes ?? []) {
    const kinds = Object.keys(v).filter((k) => !RESTRICTED_VOLUMES.has(k));
    if (kinds.length > 0) problems.push(`${where}: volume ${String(v.name)} is ${kinds.join(", ")}`);
  }
  for (const c of podContainers(w) as unknown as ContainerSecurity[]) {
    const sc = c.securityContext ?? {};
    const at = `${where} (${c.name})`;
    if ((sc.runAsNonRoot ?? pod.securityContext?.runAsNonRoot) !== true) problems.push(`${at}: runAsNonRoot is not true`);
    if ((sc.runAsUser ?? pod.securityContext?.runAsUser) === 0) problems.push(`${at}: runs as uid 0`);
    const seccomp = sc.seccompProfile?.type ?? pod.securityContext?.seccompProfile?.type;
    if (seccomp !== "RuntimeDefault" && seccomp !== "Localhost") problems.push(`${at}: no seccomp profile RuntimeDefault`);
    if (sc.privileged) problems.push(`${at}: privileged`);
    if (sc.allowPrivilegeEscalation !== false) problems.push(`${at}: allowPrivilegeEscalation is not false`);
    if (!sc.capabilities?.drop?.includes("ALL")) problems.push(`${at}: does not drop ALL capabilities`);
    const added = (sc.capabilities?.add ?? []).filter((cap) => cap !== "NET_BIND_SERVICE");
    if (added.length > 0) problems.push(`${at}: adds ${added.join(", ")}`);
  }
  return problems;
}

/** Every emptyDir of the overlay without a sizeLimit: one that fills evicts pods from its node, not only its own. */
export function unboundedEmptyDirs(objects: K8sObject[]): string[] {
  return objects
    .filter(isWorkload)
    .flatMap((w) =>
      ((w.spec.template.spec as unknown as PodSecurity).volumes ?? [])
        .filter((v) => v.emptyDir !== undefined && !(v.emptyDir as { sizeLimit?: string }).sizeLimit)
        .map((v) => `${w.kind} ${w.metadata.name}: emptyDir ${String(v.name)} has no sizeLimit`),
    );
}
