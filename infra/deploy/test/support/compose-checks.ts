import { readFileSync } from "node:fs";
import path from "node:path";
import Ajv from "ajv";
import { checkBrokerUser } from "./broker-users";
import { CLAMAV_DIR, clamdPort } from "./clamd";
import {
  addressesOf,
  checkAddresses,
  checkDatabaseRoles,
  migrationCommand,
  parseComponent,
  portOf,
  processCommand,
  readinessPortOf,
  componentOfImage,
  type Component,
} from "./components";
import { asList, dependenciesOf, environmentOf, interpolate, requiredVariables, stringsOf, type ComposeFile, type ComposeService } from "./compose-file";
import { imageName, imageTag, unpinnedImage } from "./images";
import { existsInRepo, readText } from "./repo";

/** Where third-party images listen (their defaults; the compose file does not change them). */
const IMAGE_PORTS: Record<string, number> = { postgres: 5432, rabbitmq: 5672, "minio/minio": 9000, redis: 6379 };

/**
 * The Compose Specification's JSON schema, as shipped by dclint (its schemas/compose.schema.json, a copy
 * of compose-spec/compose-spec's schema/compose-spec.json). Its `$schema` names draft-07 by an https
 * address Ajv does not know; the schema itself is plain draft-07.
 */
function composeSchema(): (doc: unknown) => string[] {
  const file = path.join(path.dirname(require.resolve("dclint/package.json")), "schemas", "compose.schema.json");
  const validate = new Ajv({ allErrors: true, strict: false, validateSchema: false }).compile(JSON.parse(readFileSync(file, "utf8")) as object);
  return (doc) =>
    validate(doc) ? [] : (validate.errors ?? []).map((e) => `docker-compose.yml${e.instancePath}: ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
}
export const validateComposeSchema = composeSchema();

/** A value for every variable the file requires, as an operator's `.env` would give them. */
export function exampleVariables(compose: ComposeFile): Record<string, string> {
  const names = new Set(stringsOf(compose).flatMap(requiredVariables));
  return Object.fromEntries([...names].map((name) => [name, `test-${name.toLowerCase().replace(/_/g, "-")}-0123456789abcdef`]));
}

const buildOf = (s: ComposeService): { context: string; target?: string } | undefined =>
  typeof s.build === "string"
    ? { context: s.build }
    : s.build
      ? { context: s.build.context ?? ".", ...(s.build.target ? { target: s.build.target } : {}) }
      : undefined;

interface Migration {
  name: string;
  service: ComposeService;
  component: Component;
  env: Record<string, string>;
}

interface Running {
  name: string;
  service: ComposeService;
  component: Component;
  env: Record<string, string>;
  config?: Record<string, unknown>;
}

/** Everything in docker-compose.yml that would break `docker compose up`, or its least privilege, as messages. */
export async function checkCompose(compose: ComposeFile, variables: Readonly<Record<string, string>>): Promise<string[]> {
  const problems = validateComposeSchema(compose);
  const running: Running[] = [];
  const migrations: Migration[] = [];

  for (const [name, service] of Object.entries(compose.services)) {
    const build = buildOf(service);
    const image = service.image ? interpolate(service.image, variables) : undefined;
    const component = image ? componentOfImage(image) : undefined;
    if (build && !existsInRepo(path.posix.join(build.context, "Dockerfile"))) problems.push(`${name}: builds ${build.context}, which has no Dockerfile`);
    if (!component) {
      if (!build && !image) problems.push(`${name}: neither image nor build`);
      else if (!build && image) {
        const unpinned = unpinnedImage(image);
        if (unpinned) problems.push(`${name}: ${unpinned}`);
      }
      continue;
    }
    if (build?.target !== component.deployable) problems.push(`${name}: runs ${image} but builds target ${String(build?.target)}`);
    const command = asList(service.command) ?? [];
    const env = environmentOf(service, variables);
    if (command.join(" ") === migrationCommand({ ...component, migrations: "deploy" }).join(" ")) migrations.push({ name, service, component, env });
    else if (command.join(" ") === processCommand(component).join(" ")) running.push({ name, service, component, env });
    else problems.push(`${name}: runs ${JSON.stringify(command)}, which ${image} does not run`);
  }

  for (const r of running) {
    const parsed = await parseComponent(`compose service ${r.name}`, r.component, r.env, Object.keys(r.env));
    problems.push(...parsed.problems);
    if (parsed.config) r.config = parsed.config;
  }
  const network = composeNetwork(compose, running, variables);
  for (const r of running.filter((r) => r.config)) {
    problems.push(...checkAddresses(`compose service ${r.name}`, r.component, r.config!, network), ...checkHealthcheck(r));
  }
  problems.push(
    ...checkMigrations(running, migrations, variables),
    ...checkCredentials(compose, running, variables),
    ...checkDependencies(compose),
    ...checkVolumes(compose),
  );
  for (const d of new Set(running.map((r) => r.component.deployable)))
    if (running.filter((r) => r.component.deployable === d).length !== 1) problems.push(`${d}: runs more than once`);
  return problems;
}

function composeNetwork(compose: ComposeFile, running: Running[], variables: Readonly<Record<string, string>>): Map<string, Set<number>> {
  const network = new Map<string, Set<number>>();
  const listen = (name: string, port: number | undefined) => port !== undefined && network.set(name, new Set([...(network.get(name) ?? []), port]));
  for (const [name, service] of Object.entries(compose.services)) {
    if (service.image) listen(name, IMAGE_PORTS[imageName(interpolate(service.image, variables))]);
    if (buildOf(service)?.context === CLAMAV_DIR) listen(name, clamdPort());
  }
  for (const r of running) if (r.config && r.component.role === "server") listen(r.name, portOf(r.component, r.config));
  return network;
}

/** A component's healthcheck asks its own /readyz (the gateway's on its internal port); only the gateway is published. */
function checkHealthcheck(r: Running): string[] {
  const problems: string[] = [];
  const readyPort = readinessPortOf(r.component, r.config!);
  const test = asList(r.service.healthcheck?.test)?.join(" ") ?? "";
  const probe = /http:\/\/(?:127\.0\.0\.1|localhost):(\d+)(\/[\w/]*)/.exec(test);
  if (!probe) problems.push(`compose service ${r.name}: no HTTP healthcheck`);
  else if (Number(probe[1]) !== readyPort || probe[2] !== "/readyz")
    problems.push(`compose service ${r.name}: healthcheck asks :${probe[1]}${probe[2]}, not :${readyPort}/readyz`);
  const published = (r.service.ports ?? []).map((p) => Number(String(p).split(":").pop()));
  if (r.component.deployable === "gateway") {
    if (!published.includes(portOf(r.component, r.config!)!)) problems.push(`compose service ${r.name}: does not publish its port`);
  } else if (published.length > 0) problems.push(`compose service ${r.name}: publishes a port; only the gateway is public`);
  return problems;
}

/**
 * Each service with a database: one migration step of the same image, run to completion before the
 * service (and its worker) starts, as the owner of the very database the service uses as its runtime
 * role, with nothing but that role's URL; no process gets the owner's URL, under any name.
 */
function checkMigrations(running: Running[], migrations: Migration[], variables: Readonly<Record<string, string>>): string[] {
  const problems: string[] = [];
  for (const r of running.filter((r) => r.component.migrations)) {
    const step = migrations.find((m) => m.component.prefix === r.component.prefix && m.component.migrations === "deploy");
    const key = `${r.component.prefix}_MIGRATION_DATABASE_URL`;
    if (!step) {
      problems.push(`compose service ${r.name}: no migration step runs its migrations`);
      continue;
    }
    if (dependenciesOf(r.service)[step.name] !== "service_completed_successfully")
      problems.push(`compose service ${r.name}: starts without waiting for ${step.name} to complete`);
    if (step.service.restart !== "no") problems.push(`${step.name}: a one-shot must not restart`);
    const [stepImage, image] = [step.service.image, r.service.image].map((i) => interpolate(i ?? "", variables));
    if (imageTag(stepImage!) !== imageTag(image!)) problems.push(`${step.name}: runs ${stepImage}, ${r.name} runs ${image}: not the same version`);
    if (!step.env[key]) problems.push(`${step.name}: no ${key}`);
    const more = Object.keys(step.env).filter((k) => k !== key);
    if (more.length > 0) problems.push(`${step.name}: gets ${more.join(", ")}; it needs the owner role's URL alone`);
    if (r.env[key] !== undefined) problems.push(`compose service ${r.name}: gets ${key}; only its migration step may change the schema`);
    for (const [k, v] of Object.entries(r.env))
      if (v === step.env[key] && k !== key) problems.push(`compose service ${r.name}: gets the owner role's URL as ${k}`);
    problems.push(...checkDatabaseRoles(`compose service ${r.name}`, r.env[`${r.component.prefix}_DATABASE_URL`], step.env[key]));
  }
  return problems;
}

/**
 * The roles, broker user and object store users the processes log in as are the ones the servers of
 * the file create: postgres-init's per-service roles, each deployable's own broker user (broker-users.sh,
 * with the password the rabbitmq service gives it), minio-setup's users (never MinIO's root).
 */
function checkCredentials(compose: ComposeFile, running: Running[], variables: Readonly<Record<string, string>>): string[] {
  const problems: string[] = [];
  const envOf = (name: string) => (compose.services[name] ? environmentOf(compose.services[name]!, variables) : {});
  const postgres = envOf("postgres");
  const rabbitmq = envOf("rabbitmq");
  const minio = envOf("minio");
  const setup = envOf("minio-setup");
  const init = readText("k8s/dev-dependencies/postgres/init-service-databases.sh");
  const created = new Set(/for service in ([\w ]+);/.exec(init)?.[1]?.split(" ") ?? []);
  const migrationEnv = Object.assign({}, ...Object.values(compose.services).map((s) => environmentOf(s, variables))) as Record<string, string>;
  for (const r of running) {
    const where = `compose service ${r.name}`;
    for (const [key, role, env] of [
      [`${r.component.prefix}_DATABASE_URL`, "app", r.env],
      [`${r.component.prefix}_MIGRATION_DATABASE_URL`, "owner", migrationEnv],
    ] as const) {
      const value = env[key];
      if (!value || !URL.canParse(value)) continue;
      const url = new URL(value);
      const service = r.component.prefix.toLowerCase();
      if (!created.has(service)) problems.push(`${where}: postgres-init creates no database for ${service}`);
      if (url.pathname !== `/meter_${service}` || decodeURIComponent(url.username) !== `meter_${service}_${role}`)
        problems.push(`${where}: ${key} is not meter_${service}_${role} on meter_${service}`);
      if (decodeURIComponent(url.password) !== postgres[`${r.component.prefix}_${role.toUpperCase()}_PASSWORD`])
        problems.push(`${where}: ${key} logs in with another password than postgres-init gives meter_${service}_${role}`);
    }
    problems.push(...checkBrokerUser(where, r.component.deployable, r.env.RABBITMQ_URL, rabbitmq));
    const access = r.config?.OBJECT_STORE_ACCESS_KEY;
    if (access !== undefined) {
      const users = new Map(
        Object.entries(setup)
          .filter(([k]) => k.endsWith("_ACCESS_KEY"))
          .map(([k, v]) => [v, setup[k.replace(/_ACCESS_KEY$/, "_SECRET_KEY")]]),
      );
      if (access === minio.MINIO_ROOT_USER) problems.push(`${where}: uses MinIO's root credentials; it needs its own user`);
      else if (users.get(String(access)) !== r.config?.OBJECT_STORE_SECRET_KEY)
        problems.push(`${where}: object store user ${String(access)} is not one minio-setup creates with that secret`);
      if (setup.FILES_BUCKET !== r.config?.FILES_BUCKET)
        problems.push(`${where}: uses bucket ${String(r.config?.FILES_BUCKET)}, minio-setup creates ${String(setup.FILES_BUCKET)}`);
    }
    for (const a of addressesOf(r.config ?? {})) if (a.host === "minio" && a.url?.port !== "9000") problems.push(`${where}: ${a.key} is not MinIO's port`);
  }
  return problems;
}

function checkDependencies(compose: ComposeFile): string[] {
  const problems: string[] = [];
  for (const [name, service] of Object.entries(compose.services)) {
    for (const [target, condition] of Object.entries(dependenciesOf(service))) {
      const dep = compose.services[target];
      if (!dep) problems.push(`${name}: depends on ${target}, which is not a service`);
      else if (condition === "service_healthy" && (!dep.healthcheck || dep.healthcheck.disable))
        problems.push(`${name}: waits for ${target} to be healthy, but ${target} has no healthcheck`);
      else if (condition === "service_completed_successfully" && !["no", "on-failure", undefined].includes(dep.restart))
        problems.push(`${name}: waits for ${target} to complete, but ${target} restarts (${dep.restart})`);
    }
  }
  const done = new Set<string>();
  const visit = (name: string, trail: string[]): void => {
    if (done.has(name) || !compose.services[name]) return;
    if (trail.includes(name)) return void problems.push(`depends_on cycle: ${[...trail, name].join(" -> ")}`);
    for (const target of Object.keys(dependenciesOf(compose.services[name]!))) visit(target, [...trail, name]);
    done.add(name);
  };
  for (const name of Object.keys(compose.services)) visit(name, []);
  return problems;
}

function checkVolumes(compose: ComposeFile): string[] {
  const declared = new Set(Object.keys(compose.volumes ?? {}));
  return Object.entries(compose.services).flatMap(([name, service]) =>
    (service.volumes ?? [])
      .map((volume) => (typeof volume === "string" ? volume.split(":")[0]! : String(volume.source ?? "")))
      .flatMap((source) => {
        if (source.startsWith("./")) return existsInRepo(source.slice(2)) ? [] : [`${name}: mounts ${source}, which does not exist`];
        return source.startsWith("/") || declared.has(source) ? [] : [`${name}: mounts volume ${source}, which is not declared`];
      }),
  );
}
