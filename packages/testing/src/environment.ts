import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { envPrefix, ServiceCatalog, type ServiceName } from "@meter/contracts";
import { ensureClamd, repoRoot, startObjectStore } from "@meter/local-infra";
import { createTestDatabase, type Migrate } from "./database";
import { moneyPathSettings } from "./money-path";
import { startFakeUpstream, type FakeUpstream } from "./fake-upstream";
import { createTestVhost, type TestVhost } from "./rabbitmq";

/**
 * What a set of services needs around it in a test: a fresh database for each that has one, a fresh
 * RabbitMQ vhost, an object store and a clamd when files is among them, a fake upstream model
 * provider, and an admin token. `env` holds the settings that point the services at them.
 */
export interface TestEnvironment {
  env: Record<string, string>;
  adminToken: string;
  fake: FakeUpstream;
  /** The billing database, for the books check (when billing-ledger is among the services). */
  billingDatabaseUrl: string | undefined;
  /** Each service's database, by service (the ones that have one). */
  databaseUrls: Partial<Record<ServiceName, string>>;
  /** The run's vhost (env.RABBITMQ_URL is its administrator's URL). */
  vhost: TestVhost;
  close(): Promise<void>;
}

export async function prepareEnvironment(
  services: readonly ServiceName[],
  opts: { upstream?: FakeUpstream; /** How the databases get their schema (another release's tool). */ migrate?: Migrate } = {},
): Promise<TestEnvironment> {
  const cleanups: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  try {
    const fake = opts.upstream ?? (await startFakeUpstream());
    if (!opts.upstream) cleanups.push(() => fake.close());
    const vhost = await createTestVhost();
    cleanups.push(() => vhost.drop());
    const adminToken = `adm_${randomBytes(16).toString("hex")}`;
    const env: Record<string, string> = { RABBITMQ_URL: vhost.url, ADMIN_TOKEN: adminToken, FAKE_UPSTREAM_API_KEY: "sk-fake-upstream" };
    let billingDatabaseUrl: string | undefined;
    const databaseUrls: Partial<Record<ServiceName, string>> = {};
    for (const service of services) {
      if (!ServiceCatalog[service].database) continue;
      const database = await createTestDatabase(path.join(repoRoot(), ServiceCatalog[service].dir), opts.migrate);
      cleanups.push(() => database.drop());
      env[`${envPrefix(service)}_DATABASE_URL`] = database.url;
      databaseUrls[service] = database.url;
      if (service === "billing-ledger") {
        billingDatabaseUrl = database.url;
        Object.assign(env, moneyPathSettings());
      }
    }
    if (services.includes("files")) Object.assign(env, await startFilesInfrastructure(cleanups));
    return { env, adminToken, fake, billingDatabaseUrl, databaseUrls, vhost, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** An object store and a clamd of this environment's own, for the files service and its worker. */
async function startFilesInfrastructure(cleanups: (() => Promise<unknown>)[]): Promise<Record<string, string>> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "meter-test-"));
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const bucket = "meter-files-test";
  const [store, clamd] = await Promise.all([
    startObjectStore({ port: 0, buckets: [bucket], dataDir: path.join(dataDir, "store") }),
    ensureClamd({ port: 0, dataDir: path.join(dataDir, "clamd") }),
  ]);
  cleanups.push(
    () => store.stop(),
    () => clamd.stop(),
  );
  return {
    OBJECT_STORE_ENDPOINT: store.endpoint,
    OBJECT_STORE_ACCESS_KEY: store.accessKey,
    OBJECT_STORE_SECRET_KEY: store.secretKey,
    FILES_BUCKET: bucket,
    CLAMD_HOST: clamd.host,
    CLAMD_PORT: String(clamd.port),
  };
}
