import { listServices, serviceDatabaseEnvVar } from "@meter/db-tools";
import { clamdConf, signatureFiles } from "./clamd";
import { checkAddresses, checkCredentials, componentOf, isMigrateCommand, parseComponent, portOf, type Component } from "./components";
import { imageName } from "./images";
import { backendsOf, checkImages, checkKustomization, checkServices, checkWorkloads, containerPort, serviceNetwork } from "./k8s-structure";
import {
  isConfigMap,
  isSecret,
  isService,
  isWorkload,
  secretValues,
  type Container,
  type K8sObject,
  type ManifestFolder,
  type Probe,
  type Workload,
} from "./manifests";
import { entryPoints, existsInRepo } from "./repo";

/** The kustomize image names of the two images this repository builds. */
export const METER_IMAGE = "meter";
export const CLAMD_IMAGE = "meter-clamd";

/** ConfigMaps deployed, and Secrets as the examples define them (operators create the real ones). */
interface Sources {
  configMaps: Map<string, Record<string, string>>;
  secrets: Map<string, Record<string, string>>;
}

/** A container's environment as the kubelet would build it, and the names its own `env:` sets. */
function environmentOf(where: string, c: Container, sources: Sources): { env: Record<string, string>; own: string[]; problems: string[] } {
  const env: Record<string, string> = {};
  const problems: string[] = [];
  const lookup = (kind: "configMaps" | "secrets", name: string, optional: boolean | undefined) => {
    const found = sources[kind].get(name);
    if (!found && !optional) problems.push(`${where}: reads ${kind === "secrets" ? "Secret" : "ConfigMap"} ${name}, which is not defined`);
    return found;
  };
  for (const from of c.envFrom ?? []) {
    if (from.configMapRef) Object.assign(env, lookup("configMaps", from.configMapRef.name, from.configMapRef.optional));
    if (from.secretRef) Object.assign(env, lookup("secrets", from.secretRef.name, from.secretRef.optional));
  }
  for (const v of c.env ?? []) {
    if (v.value !== undefined) env[v.name] = v.value;
    const ref = v.valueFrom?.secretKeyRef ?? v.valueFrom?.configMapKeyRef;
    if (!ref) continue;
    const values = lookup(v.valueFrom?.secretKeyRef ? "secrets" : "configMaps", ref.name, ref.optional);
    if (values?.[ref.key] !== undefined) env[v.name] = values[ref.key]!;
    else if (values && !ref.optional) problems.push(`${where}: ${v.name} reads key ${ref.key} of ${ref.name}, which has no such key`);
  }
  return { env, own: (c.env ?? []).map((v) => v.name), problems };
}

interface Running {
  where: string;
  workload: Workload;
  container: Container;
  component: Component;
  env: Record<string, string>;
  config?: Record<string, unknown>;
}

const probePort = (c: Container, probe: Probe | undefined): number | undefined =>
  probe?.httpGet ? containerPort([c], probe.httpGet.port) : undefined;

/** A component declares its config's port and is probed there: /readyz for readiness, /healthz for liveness and start-up. */
function checkProbes(r: Running): string[] {
  const { where, container: c } = r;
  const port = portOf(r.component, r.config!);
  const problems: string[] = [];
  if (containerPort([c], port!) === undefined) problems.push(`${where}: does not declare containerPort ${port}, where it listens`);
  const expect = (name: string, probe: Probe | undefined, path: string, required: boolean) => {
    if (!probe) {
      if (required) problems.push(`${where}: no ${name}`);
      return;
    }
    if (probe.httpGet?.path !== path || probePort(c, probe) !== port) {
      problems.push(`${where}: ${name} asks ${String(probe.httpGet?.path)} on ${String(probePort(c, probe))}, not ${path} on ${port}`);
    }
  };
  expect("readinessProbe", c.readinessProbe, "/readyz", true);
  expect("livenessProbe", c.livenessProbe, "/healthz", true);
  expect("startupProbe", c.startupProbe, "/healthz", false);
  return problems;
}

/** Everything in k8s/ (and the folders under it) that would break `kubectl apply -k`, as messages. */
export async function checkKubernetes(folders: ManifestFolder[]): Promise<string[]> {
  const objects: K8sObject[] = folders.flatMap((f) => f.objects.map((o) => o.object));
  const sources: Sources = {
    configMaps: new Map(objects.filter(isConfigMap).map((c) => [c.metadata.name, c.data ?? {}])),
    secrets: new Map([...objects, ...folders.flatMap((f) => f.examples.map((e) => e.object))].filter(isSecret).map((s) => [s.metadata.name, secretValues(s)])),
  };
  const problems = [...folders.flatMap(checkKustomization), ...checkImages(folders), ...checkWorkloads(objects), ...checkServices(objects)];
  const network = serviceNetwork(objects);
  const running: Running[] = [];
  const migrations: { where: string; env: Record<string, string> }[] = [];

  for (const workload of objects.filter(isWorkload)) {
    for (const container of workload.spec.template.spec.containers) {
      const where = `${workload.kind} ${workload.metadata.name}`;
      const resolved = environmentOf(where, container, sources);
      problems.push(...resolved.problems);
      if (imageName(container.image) !== METER_IMAGE) continue;
      const component = componentOf(container.command);
      if (isMigrateCommand(container.command)) migrations.push({ where, env: resolved.env });
      else if (!component) problems.push(`${where}: runs the Meter image with an unknown command: ${JSON.stringify(container.command)}`);
      else if (!existsInRepo(component.entry)) problems.push(`${where}: runs ${component.entry}, which does not exist`);
      else {
        const parsed = await parseComponent(where, component, resolved.env, resolved.own);
        problems.push(...parsed.problems);
        running.push({ where, workload, container, component, env: resolved.env, config: parsed.config });
      }
    }
  }

  const peers = new Map(
    objects.filter(isService).flatMap((service) => {
      const container = backendsOf(service, objects)[0]?.containers[0];
      return container ? [[service.metadata.name, environmentOf("", container, sources).env] as const] : [];
    }),
  );
  for (const r of running.filter((r) => r.config)) {
    problems.push(...checkAddresses(r.where, r.component, r.config!, network), ...checkCredentials(r.where, r.config!, peers), ...checkProbes(r));
  }
  problems.push(...checkMigrations(migrations, running), ...checkClamd(objects, sources), ...checkBucket(objects, sources, running));
  const deployed = new Set(running.map((r) => r.component.entry));
  for (const entry of entryPoints()) if (!deployed.has(entry)) problems.push(`no Kubernetes workload runs ${entry}`);
  return problems;
}

/** One migration Job, given every service database under the URL its owner uses. */
function checkMigrations(migrations: { where: string; env: Record<string, string> }[], running: Running[]): string[] {
  if (migrations.length !== 1) return [`${migrations.length} migration workloads; one expected`];
  const { where, env } = migrations[0]!;
  const problems: string[] = [];
  for (const dir of listServices()) {
    const key = serviceDatabaseEnvVar(dir);
    if (!env[key]) problems.push(`${where}: no ${key}: \`pnpm db deploy\` would migrate a database on 127.0.0.1`);
    for (const r of running.filter((r) => r.env[key] !== undefined && r.env[key] !== env[key])) {
      problems.push(`${where}: ${key} differs from the one ${r.where} uses`);
    }
  }
  return problems;
}

/** clamd's database folder (clamd.conf) holds the ConfigMap of signatures, equal to infra/clamav's files. */
function checkClamd(objects: K8sObject[], sources: Sources): string[] {
  const clamd = objects.filter(isWorkload).find((w) => w.spec.template.spec.containers.some((c) => imageName(c.image) === CLAMD_IMAGE));
  if (!clamd) return ["no workload runs the clamd image"];
  const pod = clamd.spec.template.spec;
  const databaseDir = clamdConf().get("DatabaseDirectory");
  const mount = pod.containers.flatMap((c) => c.volumeMounts ?? []).find((m) => m.mountPath === databaseDir);
  const configMap = pod.volumes?.find((v) => v.name === mount?.name)?.configMap?.name;
  if (!configMap) return [`${clamd.kind} ${clamd.metadata.name}: no ConfigMap mounted at ${databaseDir}, clamd's DatabaseDirectory`];
  const data = sources.configMaps.get(configMap) ?? {};
  const expected = signatureFiles();
  return JSON.stringify(data, Object.keys(data).sort()) === JSON.stringify(expected, Object.keys(expected).sort())
    ? []
    : [`ConfigMap ${configMap} differs from the signature files of infra/clamav (${Object.keys(expected).join(", ")})`];
}

/** Whatever else sets FILES_BUCKET (the bucket Job) creates the bucket the files service uses. */
function checkBucket(objects: K8sObject[], sources: Sources, running: Running[]): string[] {
  const used = new Set(running.map((r) => r.config?.FILES_BUCKET).filter((b) => b !== undefined));
  return objects
    .filter(isWorkload)
    .flatMap((w) => w.spec.template.spec.containers.filter((c) => imageName(c.image) !== METER_IMAGE).map((c) => ({ w, env: environmentOf("", c, sources).env })))
    .filter(({ env }) => env.FILES_BUCKET !== undefined && !used.has(env.FILES_BUCKET))
    .map(({ w, env }) => `${w.kind} ${w.metadata.name}: creates bucket ${env.FILES_BUCKET}, which no files process uses`);
}
