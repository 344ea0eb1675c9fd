import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { GATEWAY_INTERNAL_PORT } from "@meter/contracts";
import { deployWithLock, ensureClient, ensureServiceRoles, listServices, serviceDatabaseEnvVar, serviceDatabaseUrl } from "@meter/db-tools";
import {
  adminClient,
  brokerUrlOf,
  DEFAULT_PORTS,
  SERVICES,
  availableServices,
  ensureBrokerUsers,
  ensureClamd,
  ensurePrerequisites,
  ensureTesseract,
  envPrefix,
  localSecrets,
  repoRoot,
  startObjectStore,
  startSystem,
  vhostOf,
  type LocalSecrets,
  type ServiceName,
} from "@meter/local-infra";

/**
 * `npm start`: everything needed to use the API on this machine, in the foreground. Installs nothing
 * by hand (bootstrap.mjs did the dependencies), applies every migration as its database's owner role
 * and starts the services as their runtime roles (as deployed), starts what is not running,
 * seeds a demo account and prints how to call it. Ctrl-C stops what it started.
 */
const started = Number(process.env.METER_STARTED_AT ?? Date.now());
const log = (line: string) => console.log(`[start] ${line}`);

async function main(): Promise<void> {
  // bootstrap.mjs chose it (.tools/node when the machine's is older); every service process inherits it.
  log(`Node ${process.versions.node} (${process.execPath})`);
  const secrets = localSecrets();
  const env: Record<string, string> = {
    LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
    RABBITMQ_URL: process.env.RABBITMQ_URL ?? "amqp://guest:guest@127.0.0.1:5672",
    ADMIN_TOKEN: secrets.ADMIN_TOKEN,
    // Clients reach this gateway directly: no proxy's X-Forwarded-For is to be believed.
    TRUST_PROXY: process.env.TRUST_PROXY ?? "false",
  };
  const ports = Object.fromEntries(SERVICES.map((s) => [s, Number(process.env[`${envPrefix(s)}_PORT`] ?? DEFAULT_PORTS[s])])) as Record<ServiceName, number>;
  const gatewayInternalPort = Number(process.env.GATEWAY_INTERNAL_PORT ?? GATEWAY_INTERNAL_PORT);

  await assertPortsFree(ports, gatewayInternalPort);

  const rabbit = new URL(env.RABBITMQ_URL!);
  const pg = new URL(serviceDatabaseUrl(path.join(repoRoot(), "services", "billing-ledger")));
  // The gateway counts each key's requests in flight and per minute in Redis.
  const redis = new URL(process.env.REDIS_URL || "redis://127.0.0.1:6379");
  await ensurePrerequisites({
    postgres: { host: pg.hostname, port: Number(pg.port || 5432) },
    rabbitmq: { host: rabbit.hostname, port: Number(rabbit.port || 5672) },
    redis: { host: redis.hostname, port: Number(redis.port || 6379) },
    log,
  });

  const withSchema = listServices();
  log(`generating database clients and migrating ${withSchema.map((d) => path.basename(d)).join(", ")} as each database's owner role`);
  await Promise.all(withSchema.map((dir) => ensureClient(dir)));
  await Promise.all(
    withSchema.map(async (dir) => {
      const url = serviceDatabaseUrl(dir);
      const key = `${envPrefix(path.basename(dir) as ServiceName)}_DATABASE_URL`;
      if (process.env[serviceDatabaseEnvVar(dir)]) {
        // A database given by its URL is used as given: its roles are its operator's business.
        await deployWithLock(dir, url);
        env[key] = url;
        return;
      }
      // As deployed (docs/deploy.md, Databases and roles): the owner migrates, the service runs as the runtime role.
      const roles = await ensureServiceRoles(url);
      await deployWithLock(dir, roles.ownerUrl);
      env[key] = roles.appUrl;
    }),
  );

  const stops: (() => Promise<void>)[] = [];
  const services = availableServices();
  if (services.includes("files")) {
    // A configured clamd or S3 endpoint is used as it is; only the missing ones are run locally.
    if (process.env.CLAMD_HOST === undefined) {
      // clamd's own start-up lines ("... -> Limits: ...") say nothing a user needs.
      const clamd = await ensureClamd({ port: Number(process.env.CLAMD_PORT ?? 3310), log: (line) => !line.includes(" -> ") && log(line) });
      stops.push(() => clamd.stop());
      Object.assign(env, { CLAMD_HOST: clamd.host, CLAMD_PORT: String(clamd.port) });
    }
    if (process.env.OBJECT_STORE_ENDPOINT === undefined) {
      const bucket = process.env.FILES_BUCKET ?? "meter-files";
      const store = await startObjectStore({ port: Number(process.env.OBJECT_STORE_PORT ?? 9000), buckets: [bucket], log });
      stops.push(() => store.stop());
      Object.assign(env, {
        OBJECT_STORE_ENDPOINT: store.endpoint,
        OBJECT_STORE_ACCESS_KEY: store.accessKey,
        OBJECT_STORE_SECRET_KEY: store.secretKey,
      });
    }
  }

  if (services.includes("media-jobs")) await ensureTesseract({ log });

  const brokerUrls = await brokerUsers(env.RABBITMQ_URL!, secrets.brokerPasswords);

  log(`starting ${services.join(", ")}`);
  const system = await startSystem({
    env,
    internalKeys: secrets.internalKeys,
    brokerUrls,
    ports,
    gatewayInternalPort,
    autoRestart: true,
    onOutput: (name, line) => console.log(`[${name}] ${line}`),
  });
  stops.unshift(() => system.stop());

  const gateway = system.urls.gateway;
  const demo = await seedDemo(gateway, secrets.ADMIN_TOKEN);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`
Meter is running (ready in ${seconds} s).

  Base URL     ${gateway}
  Admin token  ${secrets.ADMIN_TOKEN}
  Demo API key ${demo.key}
               (organization ${demo.organizationId}, all scopes, daily budget ${demo.dailyBudget} microrub)

  Cabinet      ${gateway}/cabinet
               member:   ${demo.cabinet.email}, password ${demo.cabinet.password} (new at every start)
               operator: ${gateway}/cabinet/operator/sign-in with the admin token

  curl -s ${gateway}/v1/models -H "Authorization: Bearer ${demo.key}"

Ctrl-C stops everything this command started.
`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping`);
    for (const s of stops) await s().catch((e: unknown) => log(`while stopping: ${String(e)}`));
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
}

/**
 * Every deployable connects as its own broker user with only its rights, made with rabbitmqctl on this
 * machine (on RABBITMQ_URL's vhost). Where rabbitmqctl cannot run (not root, no broker here), every
 * process uses RABBITMQ_URL as it is, and this says so: messages are still signed and checked.
 */
async function brokerUsers(adminUrl: string, passwords: LocalSecrets["brokerPasswords"]): Promise<Record<string, string>> {
  try {
    const users = await ensureBrokerUsers({ vhost: vhostOf(adminUrl), passwords });
    return Object.fromEntries(
      Object.entries(users).map(([deployable, user]) => [deployable, brokerUrlOf(adminUrl, user, passwords[deployable as keyof typeof users])]),
    );
  } catch (e) {
    log(`WARNING: could not create the per-deployable broker users (${e instanceof Error ? e.message : String(e)}); every process uses RABBITMQ_URL's user`);
    return {};
  }
}

/**
 * Every service port must be free before anything starts: otherwise a gateway already listening there
 * (another checkout's `npm start`, say) would answer in place of ours, and the failure would show up
 * later as a puzzling refusal of our admin token.
 */
async function assertPortsFree(ports: Record<ServiceName, number>, gatewayInternalPort: number): Promise<void> {
  const wanted: [string, number, string][] = [
    ...Object.entries(ports).map(([service, port]): [string, number, string] => [service, port, `${envPrefix(service as ServiceName)}_PORT`]),
    ["the gateway's /readyz and /metrics", gatewayInternalPort, "GATEWAY_INTERNAL_PORT"],
  ];
  for (const [what, port, setting] of wanted) {
    const free = await new Promise<boolean>((resolve) => {
      const probe = createServer()
        .once("error", () => resolve(false))
        .listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
    });
    if (!free) {
      throw new Error(`port ${port} (${what}) is already in use, perhaps by another \`npm start\`: stop that, or choose another port with ${setting}`);
    }
  }
}

/**
 * The demo account, created through the admin API like any operator would: idempotent where the API
 * is (user by email, credit by reference, models by id); each start mints a fresh key, since a key's
 * secret is shown only once.
 */
async function seedDemo(gateway: string, adminToken: string) {
  const call = adminClient(gateway, adminToken);
  const models = JSON.parse(readFileSync(path.join(repoRoot(), "infra", "catalog", "models.json"), "utf8")) as Record<string, unknown>;
  for (const [id, model] of Object.entries(models)) await call("PUT", `/admin/v1/models/${id}`, model);

  const user = await call<{ id: string }>("POST", "/admin/v1/users", { email: "demo@meter.local" });
  const keys = await call<{ data: { organization_id: string }[] }>("GET", `/admin/v1/keys?user_id=${user.id}`);
  const organizationId = keys.data[0]?.organization_id ?? (await call<{ id: string }>("POST", "/admin/v1/organizations", { name: "Demo" })).id;
  await call("POST", `/admin/v1/organizations/${organizationId}/members`, { user_id: user.id });
  await call("POST", `/admin/v1/organizations/${organizationId}/credits`, { amount_microrub: 1_000_000_000, reference: "demo-initial-credit" });
  const dailyBudget = 100_000_000;
  const key = await call<{ key: string }>("POST", "/admin/v1/keys", {
    user_id: user.id,
    organization_id: organizationId,
    scopes: ["text", "images", "files:write", "files:read", "mcp:read", "mcp:invoke"],
    daily_budget_microrub: dailyBudget,
    name: `demo ${new Date().toISOString()} ${randomUUID().slice(0, 4)}`,
  });
  return { key: key.key, organizationId, dailyBudget, cabinet: await demoCabinetPassword(gateway, call, organizationId) };
}

/**
 * The demo member signs in to the web cabinet with a password this start chooses: set the way a member
 * sets one (an invitation's one-time link, used at once), so nothing but the product's own path is used.
 */
async function demoCabinetPassword(
  gateway: string,
  call: <T>(method: string, p: string, body?: unknown) => Promise<T>,
  organizationId: string,
): Promise<{ email: string; password: string }> {
  const email = "demo@meter.local";
  const invitation = await call<{ token: string }>("POST", "/admin/v1/invitations", { email, organization_id: organizationId });
  const password = `demo-${randomBytes(9).toString("base64url")}`;
  const res = await fetch(`${gateway}/cabinet/api/invitations/accept`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token: invitation.token, password }),
  });
  if (res.status !== 201) throw new Error(`setting the demo member's cabinet password -> ${res.status} ${await res.text()}`);
  return { email, password };
}

main().catch((e: unknown) => {
  console.error(`[start] failed: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
