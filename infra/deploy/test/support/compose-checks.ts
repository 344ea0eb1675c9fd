import path from "node:path";
import { listServices, serviceDatabaseEnvVar } from "@meter/db-tools";
import { CLAMAV_DIR, clamdPort } from "./clamd";
import {
  asList,
  dependenciesOf,
  environmentOf,
  interpolate,
  rawEnvironment,
  requiredVariables,
  stringsOf,
  type ComposeFile,
  type ComposeService,
} from "./compose-file";
import { checkAddresses, checkCredentials, componentOf, isMigrateCommand, parseComponent, portOf, type Component } from "./components";
import { imageName, unpinnedImage } from "./images";
import { entryPoints, existsInRepo } from "./repo";

/** Where third-party images listen (their defaults; the compose file does not change them). */
const IMAGE_PORTS: Record<string, number> = { postgres: 5432, rabbitmq: 5672, "minio/minio": 9000 };

/** A value for every variable the file requires, as an operator's `.env` would give them. */
export function exampleVariables(compose: ComposeFile): Record<string, string> {
  const names = new Set(stringsOf(compose).flatMap(requiredVariables));
  return Object.fromEntries([...names].map((name) => [name, `test-${name.toLowerCase().replace(/_/g, "-")}-0123456789abcdef`]));
}

const buildContext = (service: ComposeService): string | undefined =>
  typeof service.build === "string" ? service.build : service.build ? (service.build.context ?? ".") : undefined;

/** Runs the image built from the repository root: a Meter component or the migrations. */
const isMeterImage = (service: ComposeService): boolean => buildContext(service) === ".";

interface Running {
  name: string;
  component: Component;
  env: Record<string, string>;
  config?: Record<string, unknown>;
}

/** Everything in docker-compose.yml that would break `docker compose up`, as messages. */
export async function checkCompose(compose: ComposeFile, variables: Readonly<Record<string, string>>): Promise<string[]> {
  const problems: string[] = [];
  const services = Object.entries(compose.services);
  const running: Running[] = [];

  for (const [name, service] of services) {
    const context = buildContext(service);
    if (context !== undefined) {
      const dockerfile = typeof service.build === "object" && service.build.dockerfile ? service.build.dockerfile : "Dockerfile";
      if (!existsInRepo(path.posix.join(context, dockerfile))) problems.push(`${name}: builds ${context}, which has no ${dockerfile}`);
    } else if (!service.image) {
      problems.push(`${name}: neither image nor build`);
    } else {
      const unpinned = unpinnedImage(interpolate(service.image, variables));
      if (unpinned) problems.push(`${name}: ${unpinned}`);
    }
    if (!isMeterImage(service)) continue;
    const command = asList(service.command);
    const component = componentOf(command);
    if (component) {
      if (!existsInRepo(component.entry)) problems.push(`${name}: runs ${component.entry}, which does not exist`);
      else running.push({ name, component, env: environmentOf(service, variables) });
    } else if (!isMigrateCommand(command)) {
      problems.push(`${name}: runs the Meter image with an unknown command: ${JSON.stringify(command)}`);
    }
  }

  for (const r of running) {
    const parsed = await parseComponent(`compose service ${r.name}`, r.component, r.env, Object.keys(r.env));
    problems.push(...parsed.problems);
    r.config = parsed.config;
  }
  const network = composeNetwork(compose, running, variables);
  const others = services.filter(([, service]) => !isMeterImage(service));
  const peers = new Map(others.map(([name, service]) => [name, environmentOf(service, variables)]));
  for (const r of running) {
    if (!r.config) continue;
    problems.push(...checkAddresses(`compose service ${r.name}`, r.component, r.config, network));
    problems.push(...checkCredentials(`compose service ${r.name}`, r.config, peers), ...checkBucket(r, peers));
    problems.push(...checkHealthcheck(r, compose.services[r.name]!));
  }

  problems.push(...checkDependencies(compose), ...checkVolumes(compose), ...checkMigrate(compose, running, variables));
  const deployed = new Set(running.map((r) => r.component.entry));
  for (const entry of entryPoints()) if (!deployed.has(entry)) problems.push(`no compose service runs ${entry}`);
  return problems;
}

function composeNetwork(compose: ComposeFile, running: Running[], variables: Readonly<Record<string, string>>): Map<string, Set<number>> {
  const network = new Map<string, Set<number>>();
  const listen = (name: string, port: number | undefined) => {
    if (port !== undefined) network.set(name, new Set([...(network.get(name) ?? []), port]));
  };
  for (const [name, service] of Object.entries(compose.services)) {
    if (service.image) listen(name, IMAGE_PORTS[imageName(interpolate(service.image, variables))]);
    if (buildContext(service) === CLAMAV_DIR) listen(name, clamdPort());
  }
  for (const r of running) if (r.config && r.component.role === "server") listen(r.name, portOf(r.component, r.config));
  return network;
}

/** The one-shot that creates the bucket (whatever else sets FILES_BUCKET) creates the one files uses. */
function checkBucket(r: Running, peers: Map<string, Record<string, string>>): string[] {
  return [...peers]
    .filter(([, env]) => env.FILES_BUCKET !== undefined && r.config?.FILES_BUCKET !== undefined && env.FILES_BUCKET !== r.config.FILES_BUCKET)
    .map(([name, env]) => `${name}: creates bucket ${env.FILES_BUCKET}, but ${r.name} uses ${String(r.config?.FILES_BUCKET)}`);
}

/** A component's healthcheck asks its own /readyz; only the gateway is published, on its own port. */
function checkHealthcheck(r: Running, service: ComposeService): string[] {
  const problems: string[] = [];
  const port = portOf(r.component, r.config!);
  const test = asList(service.healthcheck?.test)?.join(" ") ?? "";
  const probe = /http:\/\/(?:127\.0\.0\.1|localhost):(\d+)(\/[\w/]*)/.exec(test);
  if (!probe) problems.push(`compose service ${r.name}: no HTTP healthcheck`);
  else if (Number(probe[1]) !== port || probe[2] !== "/readyz") problems.push(`compose service ${r.name}: healthcheck asks :${probe[1]}${probe[2]}, not :${port}/readyz`);
  const published = (service.ports ?? []).map((p) => Number(String(p).split(":").pop()));
  if (r.component.prefix === "GATEWAY") {
    if (!published.includes(port!)) problems.push(`compose service ${r.name}: does not publish its port ${port}`);
  } else if (published.length > 0) {
    problems.push(`compose service ${r.name}: publishes a port; only the gateway is public`);
  }
  return problems;
}

function checkDependencies(compose: ComposeFile): string[] {
  const problems: string[] = [];
  for (const [name, service] of Object.entries(compose.services)) {
    for (const [target, condition] of Object.entries(dependenciesOf(service))) {
      const dep = compose.services[target];
      if (!dep) {
        problems.push(`${name}: depends on ${target}, which is not a service`);
      } else if (condition === "service_healthy" && (!dep.healthcheck || dep.healthcheck.disable)) {
        problems.push(`${name}: waits for ${target} to be healthy, but ${target} has no healthcheck`);
      } else if (condition === "service_completed_successfully" && !["no", "on-failure", undefined].includes(dep.restart)) {
        problems.push(`${name}: waits for ${target} to complete, but ${target} restarts (${dep.restart})`);
      }
    }
  }
  const visiting = new Set<string>();
  const done = new Set<string>();
  const visit = (name: string, trail: string[]): void => {
    if (done.has(name) || !compose.services[name]) return;
    if (visiting.has(name)) {
      problems.push(`depends_on cycle: ${[...trail, name].join(" -> ")}`);
      return;
    }
    visiting.add(name);
    for (const target of Object.keys(dependenciesOf(compose.services[name]!))) visit(target, [...trail, name]);
    visiting.delete(name);
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
      .filter((source) => !source.startsWith(".") && !source.startsWith("/") && !declared.has(source))
      .map((source) => `${name}: mounts volume ${source}, which is not declared`),
  );
}

/**
 * Exactly one migrate step, given every service database (the ones `pnpm db deploy` migrates) under
 * the very URL the owning service uses: a different one would migrate a database nobody reads.
 */
function checkMigrate(compose: ComposeFile, running: Running[], variables: Readonly<Record<string, string>>): string[] {
  const migrates = Object.entries(compose.services).filter(([, s]) => isMeterImage(s) && isMigrateCommand(asList(s.command)));
  if (migrates.length !== 1) return [`${migrates.length} migrate services; one expected`];
  const [name, migrate] = migrates[0]!;
  const env = environmentOf(migrate, variables);
  const problems: string[] = [];
  for (const dir of listServices()) {
    const key = serviceDatabaseEnvVar(dir);
    const url = env[key];
    if (!url) {
      problems.push(`${name}: no ${key}: \`pnpm db deploy\` would migrate a database on 127.0.0.1`);
      continue;
    }
    for (const r of running.filter((r) => `${r.component.prefix}_DATABASE_URL` === key)) {
      if (r.env[key] !== url) problems.push(`${name}: ${key} differs from the one ${r.name} uses`);
    }
  }
  for (const key of Object.keys(rawEnvironment(migrate))) {
    if (key.endsWith("_DATABASE_URL") && !listServices().some((dir) => serviceDatabaseEnvVar(dir) === key)) {
      problems.push(`${name}: ${key} names no service with a Prisma schema`);
    }
  }
  return problems;
}
