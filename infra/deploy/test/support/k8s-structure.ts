import path from "node:path";
import { imageName, unpinnedImage } from "./images";
import {
  EXAMPLE_FILE,
  isConfigMap,
  isService,
  isWorkload,
  matches,
  type Container,
  type K8sObject,
  type ManifestFolder,
  type Service,
  type Workload,
} from "./manifests";
import { existsInRepo } from "./repo";

export const NAMESPACE = "meter";

const podContainers = (w: Workload): Container[] => [...(w.spec.template.spec.initContainers ?? []), ...w.spec.template.spec.containers];

/** What `kubectl apply -k` needs: listed files exist, nothing is left out, example Secrets stay out. */
export function checkKustomization(folder: ManifestFolder): string[] {
  const { dir, kustomization, files } = folder;
  const problems: string[] = [];
  if (kustomization.namespace !== NAMESPACE) problems.push(`${dir}/kustomization.yaml: namespace is ${kustomization.namespace}, not ${NAMESPACE}`);
  const resources = kustomization.resources ?? [];
  for (const resource of resources) {
    const target = path.posix.join(dir, resource);
    const ok = /\.ya?ml$/.test(resource) ? existsInRepo(target) : existsInRepo(`${target}/kustomization.yaml`);
    if (!ok) problems.push(`${dir}/kustomization.yaml: lists ${resource}, which does not exist`);
    if (EXAMPLE_FILE.test(resource)) problems.push(`${dir}/kustomization.yaml: lists the example ${resource}; operators create their own Secrets`);
  }
  for (const file of files) {
    if (!EXAMPLE_FILE.test(file) && !resources.includes(file)) problems.push(`${dir}/${file} is not listed in ${dir}/kustomization.yaml`);
  }
  const used = new Set(folder.objects.flatMap(({ object }) => (isWorkload(object) ? podContainers(object).map((c) => imageName(c.image)) : [])));
  for (const image of kustomization.images ?? []) {
    if (!used.has(image.name)) problems.push(`${dir}/kustomization.yaml: image ${image.name} is used by no container`);
  }
  return problems;
}

/** Images are ours (named in a kustomization's `images:`, so set at deploy time) or pinned releases. */
export function checkImages(folders: ManifestFolder[]): string[] {
  const ours = new Set(folders.flatMap((f) => (f.kustomization.images ?? []).map((i) => i.name)));
  return folders.flatMap((f) =>
    f.objects.flatMap(({ file, object }) =>
      isWorkload(object)
        ? podContainers(object).flatMap((c) => {
            if (ours.has(imageName(c.image))) return [];
            const unpinned = unpinnedImage(c.image);
            return unpinned ? [`${file}: ${object.metadata.name}: ${unpinned}`] : [];
          })
        : [],
    ),
  );
}

/** Selectors, volumes, resources and a non-root security context for every pod. */
export function checkWorkloads(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  const services = new Set(objects.filter(isService).map((s) => s.metadata.name));
  const configMaps = new Set(objects.filter(isConfigMap).map((c) => c.metadata.name));
  for (const w of objects.filter(isWorkload)) {
    const where = `${w.kind} ${w.metadata.name}`;
    const pod = w.spec.template.spec;
    if (w.kind !== "Job" && !matches(w.spec.selector?.matchLabels, w.spec.template.metadata?.labels)) {
      problems.push(`${where}: selector does not match its pod template's labels`);
    }
    if (w.kind === "StatefulSet" && !services.has(w.spec.serviceName ?? "")) problems.push(`${where}: serviceName ${w.spec.serviceName} is not a Service`);
    const volumes = new Map((pod.volumes ?? []).map((v) => [v.name, v]));
    const claims = new Set((w.spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name));
    for (const volume of volumes.values()) {
      if (volume.configMap && !configMaps.has(volume.configMap.name)) problems.push(`${where}: volume ${volume.name} uses ConfigMap ${volume.configMap.name}, which is not deployed`);
    }
    for (const c of podContainers(w)) {
      for (const mount of c.volumeMounts ?? []) {
        if (!volumes.has(mount.name) && !claims.has(mount.name)) problems.push(`${where}: ${c.name} mounts ${mount.name}, which is not a volume`);
      }
      for (const kind of ["requests", "limits"] as const) {
        for (const resource of ["cpu", "memory"]) {
          if (!c.resources?.[kind]?.[resource]) problems.push(`${where}: ${c.name} has no ${resource} ${kind}`);
        }
      }
      if (pod.securityContext?.runAsNonRoot !== true && c.securityContext?.runAsNonRoot !== true) problems.push(`${where}: ${c.name} may run as root`);
      if (c.securityContext?.allowPrivilegeEscalation !== false) problems.push(`${where}: ${c.name} allows privilege escalation`);
    }
  }
  return problems;
}

/** The containers behind a Service (Deployments and StatefulSets whose pods it selects). */
export function backendsOf(service: Service, objects: K8sObject[]): { workload: Workload; containers: Container[] }[] {
  return objects
    .filter(isWorkload)
    .filter((w) => w.kind !== "Job" && matches(service.spec.selector, w.spec.template.metadata?.labels))
    .map((workload) => ({ workload, containers: workload.spec.template.spec.containers }));
}

/** A port by number or by name, as a container declares it. */
export function containerPort(containers: Container[], port: number | string): number | undefined {
  const ports = containers.flatMap((c) => c.ports ?? []);
  const found = typeof port === "number" ? ports.find((p) => p.containerPort === port) : ports.find((p) => p.name === port);
  return found?.containerPort;
}

/** Every Service selects pods, and every port it forwards to is one they declare. */
export function checkServices(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  for (const service of objects.filter(isService)) {
    const backends = backendsOf(service, objects);
    if (backends.length === 0) {
      problems.push(`Service ${service.metadata.name}: selects no Deployment or StatefulSet`);
      continue;
    }
    for (const port of service.spec.ports) {
      const target = port.targetPort ?? port.port;
      for (const { workload, containers } of backends) {
        if (containerPort(containers, target) === undefined) {
          problems.push(`Service ${service.metadata.name}: port ${port.port} targets ${target}, which ${workload.metadata.name} does not declare`);
        }
      }
    }
  }
  return problems;
}

/** Service name -> the ports it accepts connections on, for the addresses in the components' configs. */
export function serviceNetwork(objects: K8sObject[]): Map<string, Set<number>> {
  return new Map(objects.filter(isService).map((s) => [s.metadata.name, new Set(s.spec.ports.map((p) => p.port))]));
}
