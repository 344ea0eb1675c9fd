import { PROXY_IDLE_SOCKET_MS } from "../../../../gateway/src/proxy/service-proxy";
import { IMAGES } from "../../../images/deployables";
import { clamdConf, signatureFiles } from "./clamd";
import { checkAddresses, componentOfImage, parseComponent, portOf, processCommand, readinessPortOf, type Component, type Network } from "./components";
import { imageTag, releaseTag, unpinnedImage } from "./images";
import { schemaProblems } from "./k8s-schema";
import { isProduction, type Overlay } from "./kustomize";
import {
  isAutoscaler,
  isConfigMap,
  isDisruptionBudget,
  isNetworkPolicy,
  isSecret,
  isService,
  isWorkload,
  matches,
  podContainers,
  secretValues,
  selects,
  type Autoscaler,
  type Container,
  type K8sObject,
  type Probe,
  type Service,
  type Workload,
} from "./manifests";
import { checkCredentials } from "./k8s-credentials";
import { checkMigrations, isMigrationJob } from "./k8s-migration-checks";
import { checkNetwork } from "./k8s-network-checks";
import { operatorMade } from "./operators";

export const NAMESPACE = "meter";
/** Kinds without a namespace. */
const CLUSTER_SCOPED = new Set(["Namespace"]);

/** The ConfigMaps and Secrets of a rendered overlay, by their (hashed) names. */
export interface Sources {
  configMaps: Map<string, Record<string, string>>;
  secrets: Map<string, Record<string, string>>;
}

export const sourcesOf = (objects: K8sObject[]): Sources => ({
  configMaps: new Map(objects.filter(isConfigMap).map((c) => [c.metadata.name, c.data ?? {}])),
  secrets: new Map(objects.filter(isSecret).map((s) => [s.metadata.name, secretValues(s)])),
});

/** A generated name without its content hash: `text-config-mb84bh6ftd` -> `text-config`. */
export const unhashed = (name: string): string => name.replace(/-[a-z0-9]{10}$/, "");

export interface ResolvedEnv {
  env: Record<string, string>;
  /** Keys given to this deployable alone (its `<name>-config` and `<name>-secrets`/`-migration`, its `env:`). */
  own: string[];
  /** The sources it reads, unhashed. */
  from: string[];
  problems: string[];
}

/** A container's environment as the kubelet builds it. */
export function environmentOf(where: string, c: Container, sources: Sources, deployable?: string): ResolvedEnv {
  const env: Record<string, string> = {};
  const own: string[] = [];
  const from: string[] = [];
  const problems: string[] = [];
  const lookup = (kind: "configMaps" | "secrets", name: string, optional: boolean | undefined) => {
    const found = sources[kind].get(name);
    if (!found && !optional) problems.push(`${where}: reads ${kind === "secrets" ? "Secret" : "ConfigMap"} ${name}, which is not deployed`);
    from.push(unhashed(name));
    if (found && deployable && unhashed(name).startsWith(`${deployable}-`)) own.push(...Object.keys(found));
    return found;
  };
  for (const f of c.envFrom ?? []) {
    if (f.configMapRef) Object.assign(env, lookup("configMaps", f.configMapRef.name, f.configMapRef.optional));
    if (f.secretRef) Object.assign(env, lookup("secrets", f.secretRef.name, f.secretRef.optional));
  }
  for (const v of c.env ?? []) {
    own.push(v.name);
    if (v.value !== undefined) env[v.name] = v.value;
    const ref = v.valueFrom?.secretKeyRef ?? v.valueFrom?.configMapKeyRef;
    if (!ref) continue;
    const values = lookup(v.valueFrom?.secretKeyRef ? "secrets" : "configMaps", ref.name, ref.optional);
    if (values?.[ref.key] !== undefined) env[v.name] = values[ref.key]!;
    else if (values && !ref.optional) problems.push(`${where}: ${v.name} reads key ${ref.key} of ${ref.name}, which has no such key`);
  }
  return { env, own, from, problems };
}

/** A Meter process in the rendered overlay, with its parsed configuration. */
export interface Running {
  where: string;
  workload: Workload;
  container: Container;
  component: Component;
  env: Record<string, string>;
  config?: Record<string, unknown>;
  /** Its service's migration Job's environment (the owner role), where it has one. */
  migration?: Record<string, string>;
}

const containerPort = (c: Container, port: number | string): number | undefined => {
  const ports = c.ports ?? [];
  return (typeof port === "number" ? ports.find((p) => p.containerPort === port) : ports.find((p) => p.name === port))?.containerPort;
};

/** A component declares its ports and is probed there: /readyz (the gateway's on its internal port), /healthz. */
function checkProbes(r: Running): string[] {
  const { where, container: c } = r;
  const port = portOf(r.component, r.config!);
  const readyPort = readinessPortOf(r.component, r.config!);
  const problems: string[] = [];
  for (const p of new Set([port, readyPort])) {
    if (p === undefined || containerPort(c, p) === undefined) problems.push(`${where}: does not declare containerPort ${String(p)}, where it listens`);
  }
  const expect = (name: string, probe: Probe | undefined, path: string, at: number | undefined) => {
    if (!probe) return problems.push(`${where}: no ${name}`);
    const asked = probe.httpGet ? containerPort(c, probe.httpGet.port) : undefined;
    if (probe.httpGet?.path !== path || asked !== at)
      problems.push(`${where}: ${name} asks ${String(probe.httpGet?.path)} on ${String(asked)}, not ${path} on ${at}`);
  };
  expect("readinessProbe", c.readinessProbe, "/readyz", readyPort);
  expect("livenessProbe", c.livenessProbe, "/healthz", readyPort === port ? port : readyPort);
  expect("startupProbe", c.startupProbe, "/healthz", readyPort === port ? port : readyPort);
  return problems;
}

/**
 * Stopping without errors: an API pod waits in preStop while its endpoint is removed, then drains for
 * SHUTDOWN_DELAY_MS (longer than the gateway keeps an idle connection, so none is left to race), and
 * the grace period covers both and then some.
 */
function checkShutdown(r: Running): string[] {
  if (r.component.role !== "server") return [];
  const problems: string[] = [];
  const preStop = r.container.lifecycle?.preStop;
  const sleepS = preStop?.sleep?.seconds ?? (preStop?.exec?.command[0] === "sleep" ? Number(preStop.exec.command[1]) : undefined);
  if (sleepS === undefined || !(sleepS > 0)) problems.push(`${r.where}: no preStop sleep: the endpoint may still receive connections after SIGTERM`);
  const delayMs = Number(r.config?.SHUTDOWN_DELAY_MS ?? 0);
  if (!(delayMs > PROXY_IDLE_SOCKET_MS))
    problems.push(`${r.where}: SHUTDOWN_DELAY_MS ${delayMs} is not longer than the gateway's idle-connection timeout (${PROXY_IDLE_SOCKET_MS} ms)`);
  const grace = r.workload.spec.template.spec.terminationGracePeriodSeconds ?? 30;
  if (grace < (sleepS ?? 0) + delayMs / 1000 + 10)
    problems.push(`${r.where}: terminationGracePeriodSeconds ${grace} leaves in-flight requests less than 10 s after preStop and the drain`);
  return problems;
}

/** Selectors, resources, a non-root and token-less pod for every workload, on a ServiceAccount of its own (never `default`). */
function checkWorkload(w: Workload, configMaps: Set<string>, serviceAccounts: Map<string, K8sObject & { automountServiceAccountToken?: boolean }>): string[] {
  const where = `${w.kind} ${w.metadata.name}`;
  const pod = w.spec.template.spec;
  const problems: string[] = [];
  if (w.kind !== "Job" && !matches(w.spec.selector?.matchLabels, w.spec.template.metadata?.labels))
    problems.push(`${where}: selector does not match its pod template's labels`);
  if (pod.automountServiceAccountToken !== false) problems.push(`${where}: mounts a service account token; no Meter pod talks to the Kubernetes API`);
  const account = pod.serviceAccountName ?? "default";
  if (account === "default") problems.push(`${where}: runs on the namespace's default ServiceAccount; give it its own`);
  else if (!serviceAccounts.has(account)) problems.push(`${where}: ServiceAccount ${account} is not deployed`);
  else if (serviceAccounts.get(account)!.automountServiceAccountToken !== false)
    problems.push(`ServiceAccount ${account}: mounts its token in every pod that does not say otherwise`);
  const volumes = new Map((pod.volumes ?? []).map((v) => [v.name, v]));
  const claims = new Set((w.spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name));
  for (const v of volumes.values())
    if (v.configMap && !configMaps.has(v.configMap.name)) problems.push(`${where}: volume ${v.name} uses ConfigMap ${v.configMap.name}, which is not deployed`);
  for (const c of podContainers(w)) {
    for (const m of c.volumeMounts ?? [])
      if (!volumes.has(m.name) && !claims.has(m.name)) problems.push(`${where}: ${c.name} mounts ${m.name}, which is not a volume`);
    for (const kind of ["requests", "limits"] as const)
      for (const r of ["cpu", "memory"]) if (!c.resources?.[kind]?.[r]) problems.push(`${where}: ${c.name} has no ${r} ${kind}`);
    if (pod.securityContext?.runAsNonRoot !== true && c.securityContext?.runAsNonRoot !== true) problems.push(`${where}: ${c.name} may run as root`);
    if (c.securityContext?.allowPrivilegeEscalation !== false) problems.push(`${where}: ${c.name} allows privilege escalation`);
  }
  return problems;
}

/** Every Service selects pods, on ports they declare. */
function checkServices(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  const workloads = objects.filter(isWorkload).filter((w) => w.kind !== "Job");
  for (const s of objects.filter(isService)) {
    const backends = workloads.filter((w) => matches(s.spec.selector, w.spec.template.metadata?.labels));
    if (backends.length === 0) problems.push(`Service ${s.metadata.name}: selects no Deployment or StatefulSet`);
    for (const port of s.spec.ports) {
      for (const w of backends) {
        if (!w.spec.template.spec.containers.some((c) => containerPort(c, port.targetPort ?? port.port) !== undefined)) {
          problems.push(
            `Service ${s.metadata.name}: port ${port.port} targets ${String(port.targetPort ?? port.port)}, which ${w.metadata.name} does not declare`,
          );
        }
      }
    }
  }
  return problems;
}

/** Service name -> ports it accepts, for the addresses in the components' configs. */
const serviceNetwork = (objects: K8sObject[]): Network =>
  new Map(objects.filter(isService).map((s: Service) => [s.metadata.name, new Set(s.spec.ports.map((p) => p.port))]));

/**
 * Release units and availability: every Deployment has its own autoscaler and disruption budget, and
 * spreads over nodes and zones; the autoscaler owns the replica count (none in the Deployment, so an
 * apply never undoes a scale-up). In prod, never fewer than two pods.
 */
function checkAvailability(objects: K8sObject[], overlay: Overlay): string[] {
  const problems: string[] = [];
  const hpas = objects.filter(isAutoscaler);
  const pdbs = objects.filter(isDisruptionBudget);
  for (const d of objects.filter(isWorkload).filter((w) => w.kind === "Deployment")) {
    const where = `Deployment ${d.metadata.name}`;
    const labels = d.spec.template.metadata?.labels;
    const hpa = hpas.find((h) => h.spec.scaleTargetRef.kind === "Deployment" && h.spec.scaleTargetRef.name === d.metadata.name);
    if (!hpa) problems.push(`${where}: no HorizontalPodAutoscaler`);
    else if (isProduction(overlay) && (hpa.spec.minReplicas ?? 1) < 2)
      problems.push(`${where}: its autoscaler allows ${hpa.spec.minReplicas ?? 1} replica in prod; at least two`);
    else problems.push(...autoscalerProblems(hpa, d));
    if (d.spec.replicas !== undefined) problems.push(`${where}: sets replicas; its autoscaler owns the count`);
    if (!pdbs.some((p) => selects(p.spec.selector, labels))) problems.push(`${where}: no PodDisruptionBudget`);
    const keys = (d.spec.template.spec.topologySpreadConstraints ?? []).filter((t) => selects(t.labelSelector, labels)).map((t) => t.topologyKey);
    for (const key of ["kubernetes.io/hostname", "topology.kubernetes.io/zone"])
      if (!keys.includes(key)) problems.push(`${where}: does not spread its pods over ${key}`);
  }
  return problems;
}

/**
 * Policies that say who: every rule letting traffic into a Deployment's pods names its peers (pods of
 * the namespace, or namespaces by a label), never any pod of any namespace or any address.
 */
function checkIngressPeers(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  const policies = objects.filter(isNetworkPolicy);
  for (const d of objects.filter(isWorkload).filter((w) => w.kind === "Deployment")) {
    const labels = d.spec.template.metadata?.labels;
    for (const p of policies.filter((x) => selects(x.spec.podSelector, labels))) {
      for (const rule of p.spec.ingress ?? []) {
        const ports = (rule.ports ?? []).map((x) => x.port ?? "(any)").join(", ") || "(any)";
        const open =
          !rule.from?.length ||
          rule.from.some(
            (peer) =>
              peer.ipBlock !== undefined ||
              (peer.namespaceSelector !== undefined &&
                !Object.keys(peer.namespaceSelector.matchLabels ?? {}).length &&
                !peer.namespaceSelector.matchExpressions?.length),
          );
        if (open) problems.push(`NetworkPolicy ${p.metadata.name}: admits anyone to Deployment ${d.metadata.name} on port ${ports}; name its callers`);
      }
    }
  }
  return problems;
}

/** The least CPU a pod's average must reach before a CPU autoscaler adds one: a quarter of a core. */
const MIN_CPU_TARGET_MILLIS = 250;

const cpuMillis = (quantity: string | number | undefined): number | undefined => {
  if (quantity === undefined) return undefined;
  const q = String(quantity);
  return q.endsWith("m") ? Number(q.slice(0, -1)) : Number(q) * 1000;
};

/**
 * An autoscaler that scales on something real: a slow scale-down (`behavior`, so the end of a burst does
 * not shed pods the next one needs), and a CPU target of at least a quarter of a core (70 % of a 100m
 * request is 7 % of one).
 */
function autoscalerProblems(hpa: Autoscaler, d: Workload): string[] {
  const where = `HorizontalPodAutoscaler ${hpa.metadata.name}`;
  const problems: string[] = [];
  const down = hpa.spec.behavior?.scaleDown;
  if (!down || (down.stabilizationWindowSeconds ?? 0) < 60 || !down.policies?.length)
    problems.push(`${where}: no behavior.scaleDown with a stabilization window of a minute or more and policies`);
  const request = cpuMillis(d.spec.template.spec.containers[0]?.resources?.requests?.cpu);
  for (const metric of hpa.spec.metrics ?? []) {
    if (metric.type !== "Resource" || metric.resource?.name !== "cpu") continue;
    const target = metric.resource.target;
    const millis =
      target.type === "AverageValue" ? cpuMillis(target.averageValue) : request === undefined ? undefined : (request * (target.averageUtilization ?? 0)) / 100;
    if (millis === undefined || millis < MIN_CPU_TARGET_MILLIS)
      problems.push(`${where}: scales at ${millis ?? "?"}m of CPU a pod; a target under ${MIN_CPU_TARGET_MILLIS}m means nothing`);
  }
  return problems;
}

/** Deployables: one image each, named after it; images of our own come with a tag, third-party ones pinned. */
function checkImages(objects: K8sObject[], overlay: Overlay): string[] {
  const problems: string[] = [];
  for (const w of objects.filter(isWorkload)) {
    for (const c of podContainers(w)) {
      const component = componentOfImage(c.image);
      if (!component) {
        if (c.image.includes("meter-") && !/meter-clamd/.test(c.image)) problems.push(`${w.kind} ${w.metadata.name}: ${c.image} is no deployable's image`);
        const unpinned = /meter-clamd/.test(c.image) ? (imageTag(c.image) ? undefined : `${c.image} has no tag`) : unpinnedImage(c.image);
        if (unpinned) problems.push(`${w.kind} ${w.metadata.name}: ${unpinned}`);
        continue;
      }
      const named = isMigrationJob(w) ? w.metadata.name.startsWith(`${component.deployable}-migrate-`) : component.deployable === w.metadata.name;
      if (!named) problems.push(`${w.kind} ${w.metadata.name}: runs ${c.image}, the image of ${component.deployable}`);
      const tag = imageTag(c.image);
      if (!tag || tag === "latest" || (isProduction(overlay) && !/\d/.test(tag)))
        problems.push(`${w.kind} ${w.metadata.name}: ${c.image} is not a release tag`);
    }
    // The release label names the migration Job: a tag moved without it would reuse the old release's Job.
    const release = w.metadata.labels?.["app.kubernetes.io/version"];
    const tag = w.kind === "Deployment" ? releaseTag(w.spec.template.spec.containers[0]!.image) : undefined;
    if (tag !== undefined && release !== undefined && tag !== release)
      problems.push(`${w.kind} ${w.metadata.name}: runs tag ${tag}, labelled release ${release}: set both (releases.yaml)`);
  }
  return problems;
}

/** clamd's database folder: DatabaseDirectory of infra/clamav/clamd.conf. */
const CLAMD_DATABASE = clamdConf().get("DatabaseDirectory");

/**
 * What clamd scans with. In production (prod, prod-ha): ClamAV's official databases, which a freshclam
 * sidecar writes into the volume clamd reads (k8s/components/clamav-freshclam), and clamd ready only
 * while they are there and current (clamd-ready); never the test signatures' ConfigMap. Elsewhere (dev):
 * the ConfigMap with exactly the signature files of infra/clamav.
 */
function checkScanner(objects: K8sObject[], overlay: Overlay): string[] {
  const clamd = objects.filter(isWorkload).find((w) => w.kind === "Deployment" && w.metadata.name === "clamd");
  if (!clamd) return ["Deployment clamd is not deployed"];
  const pod = clamd.spec.template.spec;
  const main = pod.containers.find((c) => c.name === "clamd");
  const databaseVolume = main?.volumeMounts?.find((m) => m.mountPath === CLAMD_DATABASE)?.name;
  const volume = pod.volumes?.find((v) => v.name === databaseVolume);
  const signatures = objects.filter(isConfigMap).find((c) => c.metadata.name === "clamd-signatures");
  if (!isProduction(overlay)) {
    if (!signatures) return ["ConfigMap clamd-signatures is not deployed"];
    if (volume?.configMap?.name !== signatures.metadata.name) return [`Deployment clamd: ${CLAMD_DATABASE} is not the ConfigMap clamd-signatures`];
    return JSON.stringify(signatures.data ?? {}) === JSON.stringify(signatureFiles())
      ? []
      : ["ConfigMap clamd-signatures differs from the signature files of infra/clamav"];
  }
  const problems: string[] = [];
  const freshclam = (pod.initContainers ?? []).find((c) => c.command?.[0] === "freshclam");
  if (!freshclam || freshclam.restartPolicy !== "Always") problems.push("Deployment clamd: no freshclam sidecar keeps the official signatures current");
  else if (!freshclam.volumeMounts?.some((m) => m.name === databaseVolume && m.readOnly !== true))
    problems.push(`Deployment clamd: freshclam does not write the volume clamd reads at ${CLAMD_DATABASE}`);
  if (!volume?.emptyDir)
    problems.push(`Deployment clamd: ${CLAMD_DATABASE} is ${volume?.configMap ? "a ConfigMap (the test signatures)" : "no volume"}, not freshclam's`);
  if (main?.readinessProbe?.exec?.command[0] !== "clamd-ready")
    problems.push("Deployment clamd: its readiness does not ask clamd-ready: it would take scans without current official signatures");
  return problems;
}

/** Names outside the namespace (the platform's databases, broker and object store in prod): a dotted host name. */
const isExternalHost = (network: Network) => (host: string) => !network.has(host) && host.includes(".");

/** Everything that would make this overlay fail to apply, start, connect or roll out cleanly, as messages. */
export async function checkOverlay(objects: K8sObject[], overlay: Overlay): Promise<string[]> {
  const problems: string[] = [];
  for (const o of objects) {
    if (!CLUSTER_SCOPED.has(o.kind) && o.metadata.namespace !== NAMESPACE)
      problems.push(`${o.kind} ${o.metadata.name}: namespace ${String(o.metadata.namespace)}, not ${NAMESPACE}`);
    problems.push(...schemaProblems(o));
  }
  const sources = sourcesOf(objects);
  const configMaps = new Set(sources.configMaps.keys());
  const serviceAccounts = new Map(objects.filter((o) => o.kind === "ServiceAccount").map((o) => [o.metadata.name, o]));
  problems.push(...objects.filter(isWorkload).flatMap((w) => checkWorkload(w, configMaps, serviceAccounts)));
  problems.push(
    ...checkServices(objects),
    ...checkAvailability(objects, overlay),
    ...checkIngressPeers(objects),
    ...checkImages(objects, overlay),
    ...checkScanner(objects, overlay),
  );

  // The prod-ha overlay's databases and broker: Services and pods its operators make.
  const made = operatorMade(objects);
  const network = serviceNetwork([...objects, ...made.services]);
  const running: Running[] = [];
  // The migration Jobs are checked apart (k8s-migration-checks.ts): they run the image's migrations, not its process.
  for (const workload of objects.filter(isWorkload).filter((w) => !isMigrationJob(w))) {
    for (const container of workload.spec.template.spec.containers) {
      const component = componentOfImage(container.image);
      const where = `${workload.kind} ${workload.metadata.name}`;
      const resolved = environmentOf(where, container, sources, component?.deployable);
      problems.push(...resolved.problems);
      if (!component) continue;
      if (JSON.stringify(container.command) !== JSON.stringify(processCommand(component))) {
        problems.push(`${where}: runs ${JSON.stringify(container.command)}, not ${processCommand(component).join(" ")}`);
      }
      const parsed = await parseComponent(where, component, resolved.env, resolved.own);
      problems.push(...parsed.problems);
      running.push({ where, workload, container, component, env: resolved.env, ...(parsed.config ? { config: parsed.config } : {}) });
    }
  }
  problems.push(...checkMigrations(objects, running, sources));
  for (const r of running) {
    if (!r.config) continue;
    problems.push(...checkProbes(r), ...checkShutdown(r), ...checkAddresses(r.where, r.component, r.config, network, isExternalHost(network)));
  }
  for (const image of IMAGES)
    if (!running.some((r) => r.component.deployable === image.deployable)) problems.push(`${image.deployable}: no Deployment runs it`);
  problems.push(...checkNetwork([...objects, ...made.services, ...made.workloads], running, sources), ...checkCredentials(objects, running, sources));
  return problems;
}
