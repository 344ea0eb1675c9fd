import { checkBrokerUser } from "./broker-users";
import { environmentOf, unhashed, type Running, type Sources } from "./k8s-checks";
import { isConfigMap, isWorkload, type Container, type K8sObject, type Workload } from "./manifests";
import type { PostgresCluster, RabbitmqCluster } from "./operators";

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

  problems.push(...checkOperatorCredentials(objects, running, sources));

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

/** The file at `file` in a container, when a volume (a Secret, or a projected one) mounted there provides it: `{secret, key}`. */
function fileFrom(w: Workload, c: Container, file: string): { secret: string; key: string } | undefined {
  const mount = (c.volumeMounts ?? []).find((m) => file.startsWith(`${m.mountPath.replace(/\/$/, "")}/`));
  if (!mount) return undefined;
  const relative = file.slice(mount.mountPath.replace(/\/$/, "").length + 1);
  const volume = (w.spec.template.spec.volumes ?? []).find((v) => v.name === mount.name) as
    { secret?: { secretName: string; items?: SecretItem[] }; projected?: { sources: { secret?: { name: string; items?: SecretItem[] } }[] } } | undefined;
  const sources = [
    ...(volume?.secret ? [{ name: volume.secret.secretName, items: volume.secret.items }] : []),
    ...(volume?.projected?.sources ?? []).flatMap((s) => (s.secret ? [s.secret] : [])),
  ];
  for (const s of sources) {
    const item = s.items?.find((i) => i.path === relative) ?? (s.items ? undefined : { key: relative, path: relative });
    if (item) return { secret: s.name, key: item.key };
  }
  return undefined;
}
type SecretItem = { key: string; path: string };

/**
 * prod-ha: a process reaches its service's own CloudNativePG cluster (`<cluster>-rw`) as the role and with
 * the password that cluster gives it (the owner: bootstrap.initdb; the runtime role: a managed role),
 * over TLS checked against that cluster's CA (`<cluster>-ca`, mounted where sslrootcert says); and the
 * broker as its own user of the Messaging Topology Operator, with the password of that User's Secret,
 * in a vhost it has permissions on, trusting the broker's certificate (NODE_EXTRA_CA_CERTS).
 */
function checkOperatorCredentials(objects: K8sObject[], running: Running[], sources: Sources): string[] {
  const problems: string[] = [];
  const clusters = objects.filter((o): o is PostgresCluster => o.apiVersion === "postgresql.cnpg.io/v1" && o.kind === "Cluster");
  const brokers = objects.filter((o): o is RabbitmqCluster => o.apiVersion === "rabbitmq.com/v1beta1" && o.kind === "RabbitmqCluster");
  const secret = (name: string | undefined) => (name ? sources.secrets.get(name) : undefined);
  const workloads = objects.filter(isWorkload);
  for (const r of running) {
    const service = r.component.prefix.toLowerCase();
    const roles = [
      { env: r.env, key: `${r.component.prefix}_DATABASE_URL`, role: "app", workload: r.workload, container: r.container },
      ...(r.migration
        ? workloads
            .filter((w) => w.kind === "Job" && w.metadata.name.startsWith(`${r.component.deployable}-migrate-`))
            .map((w) => ({
              env: r.migration!,
              key: `${r.component.prefix}_MIGRATION_DATABASE_URL`,
              role: "owner",
              workload: w,
              container: w.spec.template.spec.containers[0]!,
            }))
        : []),
    ];
    for (const { env, key, role, workload, container } of roles) {
      const value = env[key];
      if (!value || !URL.canParse(value)) continue;
      const url = new URL(value);
      const cluster = clusters.find((c) => url.hostname === `${c.metadata.name}-rw`);
      if (!cluster) {
        if (clusters.length > 0) problems.push(`${r.where}: ${key} reaches ${url.hostname}, not a PostgreSQL cluster's -rw Service`);
        continue;
      }
      const initdb = cluster.spec.bootstrap?.initdb;
      const user = decodeURIComponent(url.username);
      if (url.pathname !== `/meter_${service}` || initdb?.database !== `meter_${service}`)
        problems.push(
          `${r.where}: ${key} opens ${url.pathname.slice(1)} of ${cluster.metadata.name}, whose database is ${String(initdb?.database)}, not meter_${service}`,
        );
      const given =
        role === "owner"
          ? initdb?.owner === user
            ? secret(initdb.secret?.name)
            : undefined
          : secret(cluster.spec.managed?.roles?.find((x) => x.name === user && x.login && x.ensure !== "absent")?.passwordSecret?.name);
      if (user !== `meter_${service}_${role}`) problems.push(`${r.where}: ${key} logs in as ${user}, not meter_${service}_${role}`);
      else if (!given) problems.push(`${r.where}: ${key} logs in as ${user}, a role ${cluster.metadata.name} does not give a password`);
      else if (given.username !== user || given.password !== decodeURIComponent(url.password))
        problems.push(`${r.where}: ${key} logs in with another password than ${cluster.metadata.name} gives ${user}`);
      const ca = url.searchParams.get("sslrootcert");
      const mounted = ca ? fileFrom(workload, container, ca) : undefined;
      if (url.searchParams.get("sslmode") !== "verify-full" || !ca) problems.push(`${r.where}: ${key} does not check ${cluster.metadata.name}'s certificate`);
      else if (mounted?.secret !== `${cluster.metadata.name}-ca` || mounted.key !== "ca.crt")
        problems.push(`${workload.kind} ${workload.metadata.name}: ${ca} (${key}'s sslrootcert) is not ${cluster.metadata.name}-ca's ca.crt`);
    }

    const rabbit = r.env.RABBITMQ_URL;
    if (!rabbit || !URL.canParse(rabbit) || brokers.length === 0) continue;
    const url = new URL(rabbit);
    const broker = brokers.find((b) => b.metadata.name === url.hostname);
    if (!broker) {
      problems.push(`${r.where}: RABBITMQ_URL reaches ${url.hostname}, not the RabbitmqCluster`);
      continue;
    }
    const name = decodeURIComponent(url.username);
    const vhost = decodeURIComponent(url.pathname.slice(1));
    const of = (kind: string) =>
      objects.filter((o) => o.apiVersion === "rabbitmq.com/v1beta1" && o.kind === kind) as (K8sObject & { spec: Record<string, unknown> })[];
    const users = of("User").filter((u) => secret((u.spec.importCredentialsSecret as { name?: string } | undefined)?.name)?.username === name);
    if (users.length !== 1) {
      problems.push(`${r.where}: RABBITMQ_URL logs in as ${name}, which ${users.length === 0 ? "no User of the broker makes" : "several Users make"}`);
      continue;
    }
    const credentials = secret((users[0]!.spec.importCredentialsSecret as { name: string }).name)!;
    if (credentials.password !== decodeURIComponent(url.password))
      problems.push(`${r.where}: RABBITMQ_URL logs in with another password than the User ${name} has`);
    for (const kind of ["Permission", "TopicPermission"])
      if (!of(kind).some((p) => (p.spec.userReference as { name?: string } | undefined)?.name === users[0]!.metadata.name && p.spec.vhost === vhost))
        problems.push(`${r.where}: ${name} has no ${kind} on the vhost ${vhost}`);
    if (!of("Vhost").some((v) => v.spec.name === vhost)) problems.push(`${r.where}: RABBITMQ_URL names the vhost ${vhost}, which no Vhost makes`);
    if (url.protocol !== "amqps:" || !broker.spec.tls?.secretName) problems.push(`${r.where}: RABBITMQ_URL is not TLS`);
    else {
      const trusted = r.env.NODE_EXTRA_CA_CERTS ? fileFrom(r.workload, r.container, r.env.NODE_EXTRA_CA_CERTS) : undefined;
      if (trusted?.secret !== broker.spec.tls.secretName || trusted.key !== "ca.crt")
        problems.push(`${r.where}: does not trust the broker's certificate (NODE_EXTRA_CA_CERTS: ${broker.spec.tls.secretName}'s ca.crt)`);
    }
  }
  return problems;
}
