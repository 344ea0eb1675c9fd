import { checkBrokerUser } from "./broker-users";
import { environmentOf, unhashed, type Running, type Sources } from "./k8s-checks";
import { isConfigMap, isWorkload, type K8sObject, type Workload } from "./manifests";

/**
 * Where the overlay runs its own PostgreSQL, RabbitMQ and MinIO (dev), every process logs in with the
 * credentials those servers are set up with: its own database roles (created by postgres-init for
 * each service with a database), its own broker user (broker-users.sh), and its own object store user (created by
 * minio-setup), never MinIO's root.
 */
export function checkCredentials(objects: K8sObject[], running: Running[], sources: Sources): string[] {
  const workloads = objects.filter(isWorkload);
  const find = (name: string) => workloads.find((w) => w.metadata.name === name);
  const envOf = (w: Workload) => Object.assign({}, ...w.spec.template.spec.containers.map((c) => environmentOf("", c, sources).env)) as Record<string, string>;
  const problems: string[] = [];

  const postgres = find("postgres");
  if (postgres) {
    const server = envOf(postgres);
    const init = objects.filter(isConfigMap).find((c) => unhashed(c.metadata.name) === "postgres-init")?.data?.["init-service-databases.sh"] ?? "";
    const created = new Set(/for service in ([\w ]+);/.exec(init)?.[1]?.split(" ") ?? []);
    for (const r of running) {
      for (const [env, key, role] of [
        [r.env, `${r.component.prefix}_DATABASE_URL`, "app"],
        [r.migration ?? {}, `${r.component.prefix}_MIGRATION_DATABASE_URL`, "owner"],
      ] as const) {
        const value = env[key];
        if (!value || !URL.canParse(value) || new URL(value).hostname !== "postgres") continue;
        const url = new URL(value);
        const service = r.component.prefix.toLowerCase();
        if (!created.has(service)) problems.push(`${r.where}: postgres-init creates no database for ${service}`);
        if (url.pathname !== `/meter_${service}`) problems.push(`${r.where}: ${key} opens ${url.pathname.slice(1)}, not its own meter_${service}`);
        if (decodeURIComponent(url.username) !== `meter_${service}_${role}`)
          problems.push(`${r.where}: ${key} logs in as ${url.username}, not meter_${service}_${role}`);
        if (decodeURIComponent(url.password) !== server[`${r.component.prefix}_${role.toUpperCase()}_PASSWORD`]) {
          problems.push(`${r.where}: ${key} logs in with another password than postgres-init gives meter_${service}_${role}`);
        }
      }
    }
  }

  const rabbitmq = find("rabbitmq");
  if (rabbitmq) {
    const server = envOf(rabbitmq);
    for (const r of running) problems.push(...checkBrokerUser(r.where, r.component.deployable, r.env.RABBITMQ_URL, server));
  }

  const minio = find("minio");
  const setup = find("minio-setup");
  if (minio) {
    const root = envOf(minio);
    const created = setup ? envOf(setup) : {};
    const users = new Map(
      Object.entries(created)
        .filter(([k]) => k.endsWith("_ACCESS_KEY"))
        .map(([k, v]) => [v, created[k.replace(/_ACCESS_KEY$/, "_SECRET_KEY")]]),
    );
    const policy = objects.filter(isConfigMap).find((c) => unhashed(c.metadata.name) === "minio-policies")?.data?.["files-policy.json"] ?? "";
    for (const r of running.filter((r) => r.config?.OBJECT_STORE_ACCESS_KEY !== undefined)) {
      const access = String(r.config!.OBJECT_STORE_ACCESS_KEY);
      if (access === root.MINIO_ROOT_USER) problems.push(`${r.where}: uses MinIO's root credentials; it needs its own user`);
      else if (users.get(access) !== r.config!.OBJECT_STORE_SECRET_KEY)
        problems.push(`${r.where}: object store user ${access} is not one minio-setup creates with that secret`);
      if (!policy.includes(`arn:aws:s3:::${String(r.config!.FILES_BUCKET)}/*`))
        problems.push(`${r.where}: the files policy does not cover its bucket ${String(r.config!.FILES_BUCKET)}`);
    }
  }
  return problems;
}
