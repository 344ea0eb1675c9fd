import { DEFAULT_SCHEMA_WAIT_MS } from "@meter/db-tools";
import { ConfigError, migrationConfig, parseConfig } from "../../../../packages/config/src/index";
import { checkDatabaseRoles, componentOfImage, type Component } from "./components";
import { environmentOf, unhashed, type Running, type Sources } from "./k8s-checks";
import { isDisruptionBudget, isService, isWorkload, matches, podContainers, selects, type Container, type K8sObject, type Workload } from "./manifests";

/**
 * Migrations as a Job per service and release (docs/deploy.md, Migrations): the API image of a service
 * with a database runs `deploy` in a Job named after its Deployment's release label, as the owner role,
 * with the production secret checks of its Deployment, and nowhere else; every
 * pod of the service (API and worker) waits for the schema as its runtime role, for longer than the Job
 * may run, and no Deployment's pod gets the owner's credentials.
 */
export const DEPLOY_COMMAND = ["node", "dist/migrate.js", "deploy"];
export const WAIT_COMMAND = ["node", "dist/migrate.js", "wait"];

const runs = (c: Container, command: string[]) => JSON.stringify(c.command) === JSON.stringify(command);
/** A Job of the overlay that runs one of our images' migrations. */
export const isMigrationJob = (w: Workload): boolean =>
  w.kind === "Job" && w.spec.template.spec.containers.some((c) => componentOfImage(c.image) !== undefined && runs(c, DEPLOY_COMMAND));

const migrationKey = (c: Component) => `${c.prefix}_MIGRATION_DATABASE_URL`;
const runtimeKey = (c: Component) => `${c.prefix}_DATABASE_URL`;
/** A Job's name: a DNS subdomain, and 63 characters at most, as it becomes its pods' `job-name` label. */
const JOB_NAME = /^[a-z0-9]([-.a-z0-9]{0,61}[a-z0-9])?$/;

/** Every Deployment of a service with a database starts only once its schema is there, waiting as its runtime role. */
function checkWait(r: Running, sources: Sources, jobDeadlineS: number | undefined): string[] {
  const { where, workload, component } = r;
  const init = workload.spec.template.spec.initContainers ?? [];
  if (!component.migrations) return init.length > 0 ? [`${where}: has init containers, but ${component.deployable} has no database`] : [];
  const problems: string[] = [];
  if (init.some((c) => runs(c, DEPLOY_COMMAND))) problems.push(`${where}: an initContainer runs ${DEPLOY_COMMAND.join(" ")}; only the migration Job may`);
  const step = init.find((c) => runs(c, WAIT_COMMAND));
  if (!step) return [...problems, `${where}: no initContainer running ${WAIT_COMMAND.join(" ")}: it would start before its schema is there`];
  if (step.image !== r.container.image) problems.push(`${where}: waits with ${step.image}, runs ${r.container.image}: not the same version`);
  const env = environmentOf(`${where} (${step.name})`, step, sources);
  problems.push(...env.problems);
  if (env.env[runtimeKey(component)] !== r.env[runtimeKey(component)])
    problems.push(`${where} (${step.name}): waits on another database than its process uses`);
  const waitMs = Number(env.env.MIGRATION_WAIT_TIMEOUT_MS) || DEFAULT_SCHEMA_WAIT_MS;
  if (jobDeadlineS !== undefined && waitMs <= jobDeadlineS * 1000)
    problems.push(`${where} (${step.name}): gives up after ${waitMs / 1000} s, before its migration Job's deadline (${jobDeadlineS} s)`);
  return problems;
}

/** The owner's credentials reach no pod but the migration Jobs': no `-migration` Secret, no `*_MIGRATION_DATABASE_URL`, no owner URL. */
function checkOwnerCredentials(objects: K8sObject[], sources: Sources, ownerUrls: Set<string>): string[] {
  const problems: string[] = [];
  for (const w of objects.filter(isWorkload).filter((x) => !isMigrationJob(x))) {
    const where = `${w.kind} ${w.metadata.name}`;
    for (const v of w.spec.template.spec.volumes ?? [])
      if (v.secret && unhashed(v.secret.secretName).endsWith("-migration")) problems.push(`${where}: mounts the owner role's Secret ${v.secret.secretName}`);
    for (const c of podContainers(w)) {
      const resolved = environmentOf("", c, sources);
      for (const from of resolved.from.filter((f) => f.endsWith("-migration"))) problems.push(`${where}: ${c.name} reads the owner role's Secret ${from}`);
      for (const [key, value] of Object.entries(resolved.env)) {
        if (key.endsWith("_MIGRATION_DATABASE_URL")) problems.push(`${where}: ${c.name} gets ${key}; only the migration Job may change the schema`);
        else if (ownerUrls.has(value)) problems.push(`${where}: ${c.name} gets the owner role's URL as ${key}`);
      }
    }
  }
  return problems;
}

export const VERSION_LABEL = "app.kubernetes.io/version";

/** What `dist/migrate.js` refuses in these settings before it connects (its production secret checks). */
function migrationConfigProblems(where: string, component: Component, env: Record<string, string>): string[] {
  try {
    parseConfig(migrationConfig(component.prefix), env);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${where}: would not migrate: ${p}`);
    throw error;
  }
}

/** One Job per service with a database, per release: its image, named after its release label, as the owner, bounded, hardened, selected by nothing of the service. */
function checkJob(
  api: Running,
  sources: Sources,
  jobs: Workload[],
  objects: K8sObject[],
): { problems: string[]; job?: Workload; env?: Record<string, string> } {
  const { component } = api;
  const mine = jobs.filter((j) => j.spec.template.spec.containers.some((c) => componentOfImage(c.image)?.deployable === component.deployable));
  if (mine.length !== 1) return { problems: [`${api.where}: ${mine.length} migration Jobs run its image; one per release`] };
  const job = mine[0]!;
  const where = `Job ${job.metadata.name}`;
  const pod = job.spec.template.spec;
  const container = pod.containers.find((c) => runs(c, DEPLOY_COMMAND))!;
  const problems: string[] = [];
  const release = api.workload.metadata.labels?.[VERSION_LABEL];
  const name = `${component.deployable}-migrate-${String(release)}`;
  if (release === undefined) problems.push(`${api.where}: no ${VERSION_LABEL} label: its release names its migration Job`);
  else if (job.metadata.name !== name) problems.push(`${where}: migrates release ${release} of ${api.where}; its Job is named ${name}`);
  for (const labels of [job.metadata.labels, job.spec.template.metadata?.labels])
    if (labels?.[VERSION_LABEL] !== release) problems.push(`${where}: labelled release ${String(labels?.[VERSION_LABEL])}, ${api.where} ${String(release)}`);
  if (!JOB_NAME.test(job.metadata.name))
    problems.push(`${where}: not a Job name (lower-case letters, digits, '-' and '.', 63 characters at most): a release must fit in it`);
  if (container.image !== api.container.image) problems.push(`${where}: migrates with ${container.image}, ${api.where} runs ${api.container.image}`);
  if (pod.containers.length !== 1 || (pod.initContainers ?? []).length > 0) problems.push(`${where}: runs more than its migration`);

  const env = environmentOf(where, container, sources);
  problems.push(...env.problems);
  if (!env.env[migrationKey(component)]) problems.push(`${where}: no ${migrationKey(component)}`);
  const secrets = (container.envFrom ?? []).flatMap((f) => (f.secretRef ? [unhashed(f.secretRef.name)] : []));
  const foreign = [...secrets, ...(container.env ?? []).flatMap((v) => (v.valueFrom?.secretKeyRef ? [unhashed(v.valueFrom.secretKeyRef.name)] : []))].filter(
    (f) => f !== `${component.deployable}-migration`,
  );
  if (foreign.length > 0) problems.push(`${where}: reads ${foreign.join(", ")}; it needs the owner role's Secret alone`);
  problems.push(...checkDatabaseRoles(api.where, api.env[runtimeKey(component)], env.env[migrationKey(component)]));
  if (env.env.NODE_ENV !== api.env.NODE_ENV)
    problems.push(`${where}: NODE_ENV ${String(env.env.NODE_ENV)}, ${api.where} ${String(api.env.NODE_ENV)}: it would skip the checks its Deployment runs`);
  problems.push(...migrationConfigProblems(where, component, env.env));

  if (job.spec.backoffLimit === undefined || job.spec.backoffLimit > 5)
    problems.push(`${where}: backoffLimit ${String(job.spec.backoffLimit)}; a few tries, not the default six`);
  if (!job.spec.activeDeadlineSeconds) problems.push(`${where}: no activeDeadlineSeconds: a stuck migration would run for ever`);
  if (!job.spec.ttlSecondsAfterFinished) problems.push(`${where}: no ttlSecondsAfterFinished: finished Jobs would pile up, one per release`);
  if (pod.restartPolicy !== "Never" && pod.restartPolicy !== "OnFailure") problems.push(`${where}: restartPolicy ${String(pod.restartPolicy)}`);
  if (pod.securityContext?.seccompProfile?.type !== "RuntimeDefault") problems.push(`${where}: no seccomp profile RuntimeDefault`);
  if (container.securityContext?.readOnlyRootFilesystem !== true) problems.push(`${where}: writable root filesystem`);
  if (!container.securityContext?.capabilities?.drop?.includes("ALL")) problems.push(`${where}: keeps Linux capabilities`);
  const tmp = (container.volumeMounts ?? []).find((m) => m.mountPath === "/tmp");
  const tmpVolume = (pod.volumes ?? []).find((v) => v.name === tmp?.name);
  if (!tmpVolume?.emptyDir?.sizeLimit) problems.push(`${where}: no writable /tmp (an emptyDir with a sizeLimit) under its read-only root`);

  const labels = job.spec.template.metadata?.labels ?? {};
  for (const s of objects.filter(isService))
    if (matches(s.spec.selector, labels)) problems.push(`${where}: Service ${s.metadata.name} would send requests to its pods`);
  for (const p of objects.filter(isDisruptionBudget))
    if (selects(p.spec.selector, labels)) problems.push(`${where}: PodDisruptionBudget ${p.metadata.name} counts its pods`);
  for (const d of objects.filter(isWorkload).filter((w) => w.kind === "Deployment"))
    if (matches(d.spec.selector?.matchLabels, labels)) problems.push(`${where}: Deployment ${d.metadata.name}'s selector (and autoscaler) counts its pods`);
  return { problems, job, env: env.env };
}

/** Everything above for the rendered overlay; sets each running process's `migration` (the owner's env, for the credential checks). */
export function checkMigrations(objects: K8sObject[], running: Running[], sources: Sources): string[] {
  const problems: string[] = [];
  const jobs = objects.filter(isWorkload).filter(isMigrationJob);
  const deadlines = new Map<string, number | undefined>();
  const ownerUrls = new Set<string>();
  for (const api of running.filter((r) => r.component.migrations === "deploy")) {
    const checked = checkJob(api, sources, jobs, objects);
    problems.push(...checked.problems);
    deadlines.set(api.component.prefix, checked.job?.spec.activeDeadlineSeconds);
    const owner = checked.env?.[migrationKey(api.component)];
    if (owner) ownerUrls.add(owner);
    for (const r of running.filter((x) => x.component.prefix === api.component.prefix)) r.migration = checked.env;
  }
  for (const r of running) problems.push(...checkWait(r, sources, deadlines.get(r.component.prefix)));
  problems.push(...checkOwnerCredentials(objects, sources, ownerUrls));
  return problems;
}
