import { BUS_DEPLOYABLES, brokerRights, brokerUserName, BusExchanges } from "@meter/contracts";
import { checkOverlay, unhashed } from "./support/k8s-checks";
import { renderOverlay } from "./support/kustomize";
import { isNetworkPolicy, isSecret, isWorkload, secretValues, type K8sObject, type NetworkPolicy, type Secret, type Workload } from "./support/manifests";
import { isOperatorResource, type PostgresCluster, type RabbitmqCluster } from "./support/operators";

/**
 * k8s/overlays/prod-ha: the prod system with its databases on CloudNativePG and its broker on the
 * RabbitMQ Cluster Operator and Messaging Topology Operator (docs/deploy.md, "prod-ha"). What a
 * platform team checks before running it: every database replicated and backed up, the broker
 * clustered with its users and policy, every connection pointing at them with the credentials they
 * give. (checkOverlay, run on every overlay by kubernetes.test.ts, also follows each connection through
 * the NetworkPolicies to the operators' pods.)
 */
const rendered = renderOverlay("prod-ha");
const objects = (): K8sObject[] => JSON.parse(JSON.stringify(rendered)) as K8sObject[];
type Resource = K8sObject & { spec: Record<string, unknown> };
const ofKind = (o: K8sObject[], apiVersion: string, kind: string) => o.filter((x) => x.apiVersion === apiVersion && x.kind === kind) as Resource[];
const clusters = (o: K8sObject[]) => ofKind(o, "postgresql.cnpg.io/v1", "Cluster") as unknown as PostgresCluster[];
const SERVICES_WITH_DATABASE = ["billing-ledger", "files", "mcp", "media-jobs", "text"];

const secretValue = (o: K8sObject[], name: string, key: string): string =>
  secretValues(o.find((x): x is Secret => isSecret(x) && unhashed(x.metadata.name) === name)!)[key]!;
const setSecret = (o: K8sObject[], name: string, key: string, value: string) => {
  const s = o.find((x): x is Secret => isSecret(x) && unhashed(x.metadata.name) === name)!;
  s.data![key] = Buffer.from(value).toString("base64");
};

describe("PostgreSQL on CloudNativePG", () => {
  it("gives every service with a database a cluster of its own: three instances on three nodes, a synchronous standby", () => {
    const all = clusters(objects());
    expect(all.map((c) => c.metadata.name).sort()).toEqual(SERVICES_WITH_DATABASE.map((s) => `${s}-db`));
    for (const c of all) {
      const service = c.metadata.name.replace(/-db$/, "");
      expect(c.spec).toMatchObject({
        instances: 3,
        affinity: { enablePodAntiAffinity: true, podAntiAffinityType: "required", topologyKey: "kubernetes.io/hostname" },
        postgresql: { synchronous: { method: "any", number: 1 } },
        bootstrap: { initdb: { database: `meter_${service.replace(/-/g, "_")}`, owner: `meter_${service.replace(/-/g, "_")}_owner` } },
      });
    }
  });

  it("archives every cluster's WAL to the object store, with a nightly base backup and 30 days kept", () => {
    const o = objects();
    const [store, ...others] = ofKind(o, "barmancloud.cnpg.io/v1", "ObjectStore");
    expect(others).toEqual([]);
    expect(store!.spec).toMatchObject({ retentionPolicy: "30d", configuration: { destinationPath: expect.stringMatching(/^s3:\/\//) } });
    // The files' object store, one address to set.
    const files = o.find((x) => x.kind === "ConfigMap" && unhashed(x.metadata.name) === "files-config") as K8sObject & { data: Record<string, string> };
    expect((store!.spec.configuration as { endpointURL: string }).endpointURL).toBe(files.data.OBJECT_STORE_ENDPOINT);
    const keys = (store!.spec.configuration as { s3Credentials: Record<string, { name: string; key: string }> }).s3Credentials;
    for (const { name, key } of Object.values(keys)) expect(secretValue(o, name, key)).toEqual(expect.any(String));

    const schedules = ofKind(o, "postgresql.cnpg.io/v1", "ScheduledBackup");
    for (const c of clusters(o)) {
      expect(c.spec.plugins).toEqual([{ name: "barman-cloud.cloudnative-pg.io", isWALArchiver: true, parameters: { barmanObjectName: store!.metadata.name } }]);
      const mine = schedules.filter((s) => (s.spec.cluster as { name: string }).name === c.metadata.name);
      expect(mine).toHaveLength(1);
      expect(mine[0]!.spec).toMatchObject({ method: "plugin", pluginConfiguration: { name: "barman-cloud.cloudnative-pg.io" }, immediate: true });
      // Every day (CloudNativePG's six fields: seconds first).
      expect(mine[0]!.spec.schedule).toMatch(/^\d+ \d+ \d+ \* \* \*$/);
    }
  });

  it("points every service's database URLs (runtime and owner roles) at its own cluster's primary, with the passwords the cluster gives", async () => {
    const o = objects();
    const urls = o.filter(isSecret).flatMap((s) =>
      Object.entries(secretValues(s))
        .filter(([k]) => k.endsWith("DATABASE_URL"))
        .map(([k, v]) => [k, new URL(v)] as const),
    );
    expect(urls.length).toBe(12);
    for (const [key, url] of urls) {
      const service = key
        .replace(/_(MIGRATION_)?DATABASE_URL$/, "")
        .toLowerCase()
        .replace(/_/g, "-");
      expect([key, url.hostname, url.port, url.searchParams.get("sslmode")]).toEqual([key, `${service}-db-rw`, "5432", "verify-full"]);
    }
    expect(await checkOverlay(o, "prod-ha")).toEqual([]);
  });

  it.each<[string, (o: K8sObject[]) => void, RegExp]>([
    [
      "a URL to another service's cluster",
      (o) => setSecret(o, "mcp-secrets", "MCP_DATABASE_URL", secretValue(o, "mcp-secrets", "MCP_DATABASE_URL").replace("mcp-db-rw", "text-db-rw")),
      /Deployment mcp: MCP_DATABASE_URL opens meter_mcp of text-db, whose database is meter_text/,
    ],
    [
      "a runtime password the cluster does not give",
      (o) => setSecret(o, "text-db-app", "password", "0123456789abcdef0123456789abcdef"),
      /Deployment text: TEXT_DATABASE_URL logs in with another password than text-db gives meter_text_app/,
    ],
    [
      "an owner password the cluster was not made with",
      (o) => setSecret(o, "files-db-owner", "password", "0123456789abcdef0123456789abcdef"),
      /FILES_MIGRATION_DATABASE_URL logs in with another password than files-db gives meter_files_owner/,
    ],
    [
      "the runtime role not made by the cluster",
      (o) => void (clusters(o).find((c) => c.metadata.name === "billing-ledger-db")!.spec.managed!.roles = []),
      /BILLING_LEDGER_DATABASE_URL logs in as meter_billing_ledger_app, a role billing-ledger-db does not give a password/,
    ],
    [
      "a pod without its cluster's CA",
      (o) => void ((o.find((x): x is Workload => isWorkload(x) && x.metadata.name === "files-worker")!.spec.template.spec.volumes as unknown[]).length = 0),
      /files-worker: .*mounts ca, which is not a volume|\/etc\/meter\/ca\/postgres\.crt .* is not files-db-ca's ca\.crt/,
    ],
    [
      "a pod the network policies keep from its database",
      (o) =>
        void o.splice(
          o.findIndex((x) => isNetworkPolicy(x) && x.metadata.name === "to-text-db"),
          1,
        ),
      /Deployment text cannot reach text-db:5432, which it uses \(TEXT_DATABASE_URL\)/,
    ],
    [
      "a database another service's pods may reach",
      (o) => {
        const policy = o.find((x): x is NetworkPolicy => isNetworkPolicy(x) && x.metadata.name === "to-text-db")!;
        policy.spec.podSelector.matchExpressions![0]!.values!.push("mcp");
        const db = o.find((x): x is NetworkPolicy => isNetworkPolicy(x) && x.metadata.name === "text-db")!;
        db.spec.ingress![0]!.from![0]!.podSelector!.matchExpressions![0]!.values!.push("mcp");
      },
      /Deployment mcp may reach text-db:5432, which it does not use/,
    ],
  ])("fails on %s", async (_name, breakIt, expected) => {
    const o = objects();
    breakIt(o);
    expect((await checkOverlay(o, "prod-ha")).join("\n")).toMatch(expected);
  });
});

describe("RabbitMQ on the RabbitMQ Cluster Operator", () => {
  it("runs three nodes, one a node, with TLS and quorum queues kept at one member a node", () => {
    const [broker, ...others] = ofKind(objects(), "rabbitmq.com/v1beta1", "RabbitmqCluster") as unknown as RabbitmqCluster[];
    expect(others).toEqual([]);
    expect(broker!.spec).toMatchObject({ replicas: 3, tls: { secretName: "meter-rabbitmq-tls" } });
    const spec = broker!.spec as unknown as {
      rabbitmq: { additionalConfig: string };
      affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { topologyKey: string }[] } };
    };
    expect(spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]!.topologyKey).toBe("kubernetes.io/hostname");
    expect(spec.rabbitmq.additionalConfig).toMatch(/quorum_queue\.continuous_membership_reconciliation\.target_group_size = 3/);
    const certificate = ofKind(objects(), "cert-manager.io/v1", "Certificate").find((c) => c.spec.secretName === "meter-rabbitmq-tls")!;
    expect(certificate.spec.dnsNames).toContain("meter-rabbitmq");
  });

  it("has the vhost, the quorum-queue policy, and every bus deployable's user with exactly the rights of contracts' brokerRights", () => {
    const o = objects();
    expect(ofKind(o, "rabbitmq.com/v1beta1", "Vhost").map((v) => v.spec.name)).toEqual(["meter"]);
    const [policy] = ofKind(o, "rabbitmq.com/v1beta1", "Policy");
    expect(policy!.spec).toMatchObject({ vhost: "meter", applyTo: "quorum_queues", pattern: ".*", definition: { "queue-leader-locator": "balanced" } });
    for (const d of BUS_DEPLOYABLES) {
      const rights = brokerRights(d);
      const user = ofKind(o, "rabbitmq.com/v1beta1", "User").find((u) => u.metadata.name === brokerUserName(d))!;
      expect(secretValue(o, (user.spec.importCredentialsSecret as { name: string }).name, "username")).toBe(brokerUserName(d));
      const byUser = (kind: string) =>
        ofKind(o, "rabbitmq.com/v1beta1", kind).filter((p) => (p.spec.userReference as { name: string }).name === user.metadata.name);
      expect(byUser("Permission").map((p) => p.spec)).toEqual([
        expect.objectContaining({ vhost: "meter", permissions: { configure: rights.configure, write: rights.write, read: rights.read } }),
      ]);
      expect(byUser("TopicPermission").map((p) => p.spec)).toEqual([
        expect.objectContaining({ vhost: "meter", permissions: { exchange: BusExchanges.main, write: rights.topicWrite, read: rights.topicRead } }),
      ]);
    }
    // mcp uses no bus, and has no user.
    expect(ofKind(o, "rabbitmq.com/v1beta1", "User")).toHaveLength(BUS_DEPLOYABLES.length);
  });

  it.each<[string, (o: K8sObject[]) => void, RegExp]>([
    [
      "a broker password its User does not have",
      (o) => setSecret(o, "files-worker-broker", "password", "0123456789abcdef0123456789abcdef"),
      /Deployment files-worker: RABBITMQ_URL logs in with another password than the User meter-files-worker has/,
    ],
    [
      "a deployable that does not trust the broker's certificate",
      (o) => void delete o.find((x): x is Workload => isWorkload(x) && x.metadata.name === "gateway")!.spec.template.spec.containers[0]!.env,
      /Deployment gateway: does not trust the broker's certificate/,
    ],
  ])("fails on %s", async (_name, breakIt, expected) => {
    const o = objects();
    breakIt(o);
    expect((await checkOverlay(o, "prod-ha")).join("\n")).toMatch(expected);
  });
});

it("leaves no example address for the databases and the broker: only Redis's, which stays the platform's", () => {
  const o = objects();
  const text = JSON.stringify(o.filter((x) => x.kind !== "Secret")) + JSON.stringify(o.filter(isSecret).map(secretValues));
  expect(text).not.toMatch(/postgres\.example\.internal|rabbitmq\.example\.internal/);
  const placeholders = o
    .filter(isNetworkPolicy)
    .filter((p) => JSON.stringify(p).includes("192.0.2."))
    .map((p) => p.metadata.name);
  expect(placeholders).toEqual(["to-redis"]);
});

it("lets a move from prod create the databases and the broker first (docs/deploy.md): their label selects them, all they read, and no deployable", () => {
  const o = objects();
  const first = o.filter((x) =>
    ["database", "broker"].includes((x.metadata as { labels?: Record<string, string> }).labels?.["app.kubernetes.io/component"] ?? ""),
  );
  const selected = new Set(first.map((x) => `${x.kind} ${x.metadata.name}`));
  expect(o.filter(isOperatorResource).filter((x) => !selected.has(`${x.kind} ${x.metadata.name}`))).toEqual([]);
  const read = [
    ...clusters(o).flatMap((c) => [
      `Secret ${c.spec.bootstrap!.initdb!.secret!.name}`,
      ...c.spec.managed!.roles!.map((r) => `Secret ${r.passwordSecret!.name}`),
      ...(c.spec.bootstrap!.initdb as { postInitApplicationSQLRefs: { configMapRefs: { name: string }[] } }).postInitApplicationSQLRefs.configMapRefs.map(
        (m) => `ConfigMap ${m.name}`,
      ),
    ]),
    ...ofKind(o, "barmancloud.cnpg.io/v1", "ObjectStore").flatMap((s) =>
      Object.values((s.spec.configuration as { s3Credentials: Record<string, { name: string }> }).s3Credentials).map((k) => `Secret ${k.name}`),
    ),
    ...ofKind(o, "rabbitmq.com/v1beta1", "User").map((u) => `Secret ${(u.spec.importCredentialsSecret as { name: string }).name}`),
  ];
  expect(read.filter((r) => !selected.has(r))).toEqual([]);
  expect(first.filter(isWorkload)).toEqual([]);
});
