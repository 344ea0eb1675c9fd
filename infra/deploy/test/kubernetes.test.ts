import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { checkOverlay, unhashed } from "./support/k8s-checks";
import { selects } from "./support/manifests";
import { addComponent, copyExampleSecrets, isProduction, OVERLAYS, renderOverlay, type Overlay } from "./support/kustomize";
import { writeOverlaySecrets } from "../write-secrets";
import type { Autoscaler, Container, K8sObject, NetworkPolicy, Secret, Workload } from "./support/manifests";

/**
 * Every overlay of k8s/ rendered by kustomize (as `kubectl apply -k` would), each object validated
 * against the Kubernetes schemas, and each deployable's environment parsed by its own loadConfig, its
 * addresses, probes, migration step, shutdown, autoscaler, disruption budget and network policies
 * checked against what its code does (support/k8s-checks.ts). No cluster is needed, none was used.
 */
const rendered = new Map<Overlay, K8sObject[]>(OVERLAYS.map((o) => [o, renderOverlay(o)]));
const objectsOf = (o: Overlay): K8sObject[] => JSON.parse(JSON.stringify(rendered.get(o))) as K8sObject[];

describe.each(OVERLAYS)("k8s/overlays/%s", (overlay) => {
  it("renders objects the Kubernetes schemas accept, with which every deployable would start, connect, roll and stop cleanly", async () => {
    expect(await checkOverlay(objectsOf(overlay), overlay)).toEqual([]);
  });

  it("works with the secrets `pnpm k8s:secrets` writes (real keys, random passwords that agree across files)", async () => {
    const objects = renderOverlay(overlay, undefined, writeOverlaySecrets);
    expect(await checkOverlay(objects, overlay)).toEqual([]);
    const text = objects.find((o) => o.kind === "Secret" && unhashed(o.metadata.name) === "text-secrets") as Secret;
    expect(Buffer.from(text.data!.INTERNAL_SIGNING_KEY!, "base64").toString()).toMatch(/^text-/);
  });

  it("starts nothing with the examples' placeholders copied as they are: every deployable names them", async () => {
    const problems = (await checkOverlay(renderOverlay(overlay, undefined, copyExampleSecrets), overlay)).join("\n");
    for (const deployable of ["gateway", "text", "media-jobs", "media-jobs-worker", "files", "files-worker", "billing-ledger", "mcp"]) {
      expect(problems).toMatch(new RegExp(`Deployment ${deployable}\\b.*would not start: [^\\n]*\\n(  .*\\n)*  INTERNAL_SIGNING_KEY: holds a placeholder`));
    }
    expect(problems).toMatch(/ADMIN_TOKEN: holds a placeholder/);
    expect(problems).toMatch(/FILES_UPLOAD_SECRET: holds a placeholder/);
    expect(problems).toMatch(/OBJECT_STORE_SECRET_KEY: holds a placeholder/);
    expect(problems).toMatch(/BILLING_LEDGER_DATABASE_URL: holds a placeholder/);
    expect(problems).toMatch(/RABBITMQ_URL: holds a placeholder/);
  });
});

const find = <T extends K8sObject>(objects: K8sObject[], kind: string, name: string): T => {
  const found = objects.find((o) => o.kind === kind && unhashed(o.metadata.name) === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found as T;
};
const container = (objects: K8sObject[], name: string): Container => find<Workload>(objects, "Deployment", name).spec.template.spec.containers[0]!;
const setSecret = (objects: K8sObject[], name: string, key: string, value: string) => {
  find<Secret>(objects, "Secret", name).data![key] = Buffer.from(value).toString("base64");
};
const secretOf = (objects: K8sObject[], name: string, key: string): string =>
  Buffer.from(find<Secret>(objects, "Secret", name).data![key]!, "base64").toString("utf8");

/** Changes one file of the rendered copy of k8s/. */
const edit = (file: string, change: (text: string) => string) => (k8s: string) =>
  writeFileSync(path.join(k8s, file), change(readFileSync(path.join(k8s, file), "utf8")));

describe("fails on a broken file", () => {
  const sourceCases: [string, Overlay, (k8s: string) => void, RegExp][] = [
    [
      "a misspelt field",
      "prod",
      edit("services/text/deployment.yaml", (t) => t.replace("imagePullPolicy:", "imagePullPolicyy:")),
      /Deployment text: unknown field spec\.template\.spec\.(initC|c)ontainers\.0\.imagePullPolicyy/,
    ],
    [
      "a port of the wrong type",
      "prod",
      edit("services/text/deployment.yaml", (t) => t.replace("containerPort: 8081", 'containerPort: "8081"')),
      /Deployment text: .*containerPort must be integer/,
    ],
    [
      "a misspelt setting",
      "dev",
      (k8s) => appendFileSync(path.join(k8s, "services/text/config.env"), "TEXT_SYNC_TIMOUT_MS=1000\n"),
      /sets TEXT_SYNC_TIMOUT_MS, which services\/text\/src\/main\.ts does not read/,
    ],
    [
      "a required secret missing",
      "dev",
      edit("overlays/dev/secrets/gateway.env", (t) => t.replace(/^ADMIN_TOKEN=.*$/m, "")),
      /gateway\/src\/main\.ts would not start: [\s\S]*ADMIN_TOKEN/,
    ],
    [
      "a worker on the broker's administrator",
      "dev",
      edit("overlays/dev/secrets/files-worker.env", (t) => t.replace(/^RABBITMQ_URL=.*$/m, "RABBITMQ_URL=amqp://meter:0123456789abcdef0123@rabbitmq:5672")),
      /Deployment files-worker: RABBITMQ_URL logs in as the broker's administrator; it needs its own user/,
    ],
    [
      "a worker on its API process's broker user",
      "dev",
      edit("overlays/dev/secrets/files-worker.env", (t) => t.replace(/meter-files-worker:([^@]*)@/, "meter-files:$1@")),
      /Deployment files-worker: RABBITMQ_URL logs in as meter-files, not its own meter-files-worker/,
    ],
  ];
  it.each(sourceCases)("%s", async (_name, overlay, change, expected) => {
    expect((await checkOverlay(renderOverlay(overlay, change), overlay)).join("\n")).toMatch(expected);
  });

  const policy = (o: K8sObject[], name: string) => find<NetworkPolicy>(o, "NetworkPolicy", name);
  const cases: [string, Overlay, (o: K8sObject[]) => void, RegExp][] = [
    [
      "a call the network policy blocks",
      "dev",
      (o) => void (policy(o, "text").spec.egress = policy(o, "text").spec.egress!.slice(1)),
      /Deployment text cannot reach billing-ledger:8084, which it uses \(BILLING_LEDGER_URL\)/,
    ],
    [
      "a database another deployable may reach",
      "dev",
      (o) => {
        policy(o, "postgres").spec.ingress![0]!.from![0]!.podSelector!.matchExpressions![0]!.values!.push("gateway");
        policy(o, "to-postgres").spec.podSelector.matchExpressions![0]!.values!.push("gateway");
      },
      /Deployment gateway may reach postgres:5432, which it does not use/,
    ],
    [
      "a scanner more than the files service may reach",
      "dev",
      (o) => {
        delete policy(o, "clamd").spec.ingress![0]!.from;
        policy(o, "media-jobs-worker").spec.egress!.push({ to: [{ podSelector: { matchLabels: { "app.kubernetes.io/name": "clamd" } } }] });
      },
      /Deployment media-jobs-worker may reach clamd:3310, which it does not use/,
    ],
    [
      "a gateway any pod of any namespace may call",
      "prod",
      (o) => void delete policy(o, "gateway").spec.ingress![0]!.from,
      /NetworkPolicy gateway: admits anyone to Deployment gateway on port 8080; name its callers/,
    ],
    [
      "a service open to every namespace",
      "dev",
      (o) => void policy(o, "billing-ledger").spec.ingress![0]!.from!.push({ namespaceSelector: {} }),
      /NetworkPolicy billing-ledger: admits anyone to Deployment billing-ledger on port 8084/,
    ],
    [
      "an open door to the outside",
      "prod",
      (o) => void policy(o, "gateway").spec.egress!.push({ to: [{ ipBlock: { cidr: "0.0.0.0/0" } }] }),
      /Deployment gateway may reach port \(any\) outside the cluster/,
    ],
    [
      "the migration role given to the process",
      "prod",
      (o) => void setSecret(o, "text-secrets", "TEXT_DATABASE_URL", secretOf(o, "text-migration", "TEXT_MIGRATION_DATABASE_URL")),
      /runs as its migration role/,
    ],
    [
      "an API that does not wait for its schema",
      "prod",
      (o) => void delete find<Workload>(o, "Deployment", "text").spec.template.spec.initContainers,
      /Deployment text: no initContainer running node dist\/migrate\.js wait: it would start before its schema is there/,
    ],
    [
      "a worker that could migrate",
      "prod",
      (o) => void (find<Workload>(o, "Deployment", "files-worker").spec.template.spec.initContainers![0]!.command = ["node", "dist/migrate.js", "deploy"]),
      /Deployment files-worker: an initContainer runs node dist\/migrate\.js deploy; only the migration Job may/,
    ],
    [
      "a Deployment without autoscaler",
      "prod",
      (o) => o.splice(o.indexOf(find(o, "HorizontalPodAutoscaler", "billing-ledger")), 1),
      /Deployment billing-ledger: no HorizontalPodAutoscaler/,
    ],
    [
      "one replica in prod",
      "prod",
      (o) => void (find<Autoscaler>(o, "HorizontalPodAutoscaler", "mcp").spec.minReplicas = 1),
      /Deployment mcp: its autoscaler allows 1 replica in prod/,
    ],
    [
      "an autoscaler that sheds pods at once",
      "dev",
      (o) => void delete find<Autoscaler>(o, "HorizontalPodAutoscaler", "text").spec.behavior,
      /HorizontalPodAutoscaler text: no behavior\.scaleDown/,
    ],
    [
      "a CPU target of 70 % of a 100m request",
      "prod",
      (o) => {
        container(o, "gateway").resources!.requests!.cpu = "100m";
        find<Autoscaler>(o, "HorizontalPodAutoscaler", "gateway").spec.metrics![0]!.resource!.target = { type: "Utilization", averageUtilization: 70 };
      },
      /HorizontalPodAutoscaler gateway: scales at 70m of CPU a pod; a target under 250m means nothing/,
    ],
    ["no preStop", "prod", (o) => void delete container(o, "files").lifecycle, /Deployment files: no preStop sleep/],
    [
      "a drain shorter than the gateway's idle connections",
      "prod",
      (o) => void (find<{ data: Record<string, string> } & K8sObject>(o, "ConfigMap", "text-config").data.SHUTDOWN_DELAY_MS = "1000"),
      /Deployment text: SHUTDOWN_DELAY_MS 1000 is not longer/,
    ],
    [
      "one image for two deployables",
      "prod",
      (o) => void (container(o, "text").image = container(o, "billing-ledger").image),
      /Deployment text: runs \S+meter\/billing-ledger:1\.1\.0, the image of billing-ledger/,
    ],
    [
      "a service account token",
      "dev",
      (o) => void (find<Workload>(o, "Deployment", "gateway").spec.template.spec.automountServiceAccountToken = true),
      /Deployment gateway: mounts a service account token/,
    ],
    [
      "clamd on the namespace's default ServiceAccount",
      "prod",
      (o) => void delete find<Workload>(o, "Deployment", "clamd").spec.template.spec.serviceAccountName,
      /Deployment clamd: runs on the namespace's default ServiceAccount; give it its own/,
    ],
    [
      "a ServiceAccount that mounts its token",
      "dev",
      (o) => void delete (find(o, "ServiceAccount", "rabbitmq") as K8sObject & { automountServiceAccountToken?: boolean }).automountServiceAccountToken,
      /ServiceAccount rabbitmq: mounts its token in every pod that does not say otherwise/,
    ],
    [
      "a production scanner on the test signatures alone",
      "prod",
      (o) => {
        const clamd = find<Workload>(o, "Deployment", "clamd").spec.template.spec;
        delete clamd.initContainers;
        clamd.containers[0]!.readinessProbe = { exec: { command: ["clamd-ping"] } };
      },
      /Deployment clamd: no freshclam sidecar keeps the official signatures current\n.*Deployment clamd: its readiness does not ask clamd-ready/,
    ],
    ["an object without namespace", "prod", (o) => void delete find(o, "Service", "files").metadata.namespace, /Service files: namespace undefined, not meter/],
    [
      "readiness on the wrong path",
      "dev",
      (o) => void (container(o, "billing-ledger").readinessProbe = { httpGet: { path: "/healthz", port: "http" } }),
      /Deployment billing-ledger: readinessProbe asks \/healthz/,
    ],
    [
      "a database password the test PostgreSQL does not give",
      "dev",
      (o) => void setSecret(o, "mcp-secrets", "MCP_DATABASE_URL", "postgresql://meter_mcp_app:other@postgres:5432/meter_mcp"),
      /Deployment mcp: MCP_DATABASE_URL logs in with another password/,
    ],
    [
      "another service's database",
      "dev",
      (o) => void setSecret(o, "mcp-secrets", "MCP_DATABASE_URL", secretOf(o, "text-secrets", "TEXT_DATABASE_URL")),
      /Deployment mcp: MCP_DATABASE_URL opens meter_text, not its own meter_mcp/,
    ],
    [
      "MinIO's root credentials for the files service",
      "dev",
      (o) => {
        setSecret(o, "files-secrets", "OBJECT_STORE_ACCESS_KEY", secretOf(o, "meter-dev-dependencies", "MINIO_ROOT_USER"));
        setSecret(o, "files-secrets", "OBJECT_STORE_SECRET_KEY", secretOf(o, "meter-dev-dependencies", "MINIO_ROOT_PASSWORD"));
      },
      /Deployment files: uses MinIO's root credentials/,
    ],
  ];
  it.each(cases)("%s", async (_name, overlay, breakIt, expected) => {
    const objects = objectsOf(overlay);
    breakIt(objects);
    expect((await checkOverlay(objects, overlay)).join("\n")).toMatch(expected);
  });
});

/** Objects that differ between two renders, by kind and unhashed name ("Deployment text"). */
function changed(before: K8sObject[], after: K8sObject[]): string[] {
  const byName = (objects: K8sObject[]) => new Map(objects.map((o) => [`${o.kind} ${unhashed(o.metadata.name)}`, JSON.stringify(o)]));
  const a = byName(before);
  const b = byName(after);
  return [...new Set([...a.keys(), ...b.keys()])].filter((k) => a.get(k) !== b.get(k)).sort();
}

describe("each deployable is released on its own (prod)", () => {
  const before = () => objectsOf("prod");
  it("a new release (its image's tag and its release label) changes only that deployable's Deployment and migration Job", async () => {
    const after = renderOverlay("prod", (k8s) => {
      const file = path.join(k8s, "overlays/prod/kustomization.yaml");
      writeFileSync(file, readFileSync(file, "utf8").replace(/(name: meter-text\n\s+newName: \S+\n\s+newTag:) "1\.1\.0"/, '$1 "1.1.1"'));
      const releases = path.join(k8s, "overlays/prod/releases.yaml");
      writeFileSync(releases, readFileSync(releases, "utf8").replace(/(name: text\n\s+labels:\n\s+app\.kubernetes\.io\/version:) "1\.1\.0"/, '$1 "1.1.1"'));
    });
    expect(await checkOverlay(after, "prod")).toEqual([]);
    // The old release's Job is no longer rendered (Kubernetes removes it after its ttlSecondsAfterFinished).
    expect(changed(before(), after)).toEqual(["Deployment text", "Job text-migrate-1.1.0", "Job text-migrate-1.1.1"]);
    expect(container(after, "text").image).toBe("registry.example.com/meter/text:1.1.1");
    expect(find<Workload>(after, "Deployment", "text").spec.template.spec.initContainers![0]!.image).toBe("registry.example.com/meter/text:1.1.1");
    expect(find<Workload>(after, "Job", "text-migrate-1.1.1").spec.template.spec.containers[0]!.image).toBe("registry.example.com/meter/text:1.1.1");
  });

  it("a new tag without its release label is caught: the old release's Job would be applied with another image", async () => {
    const after = renderOverlay("prod", (k8s) => {
      const file = path.join(k8s, "overlays/prod/kustomization.yaml");
      writeFileSync(file, readFileSync(file, "utf8").replace(/(name: meter-files\n\s+newName: \S+\n\s+newTag:) "1\.1\.0"/, '$1 "1.1.1"'));
    });
    expect((await checkOverlay(after, "prod")).join("\n")).toMatch(/Deployment files: runs tag 1\.1\.1, labelled release 1\.1\.0: set both/);
  });

  it("a new owner password changes only its Secret: the Job of a release cannot change, the next one reads it", () => {
    const after = renderOverlay(
      "prod",
      edit("overlays/prod/secrets/text-migration.env", (t) => t.replace(/meter_text_owner:[^@]*@/, "meter_text_owner:rotated0123456789abcdef@")),
    );
    expect(changed(before(), after)).toEqual(["Secret text-migration"]);
  });

  it("a changed setting rolls only that deployable (its ConfigMap's name carries a hash)", () => {
    const after = renderOverlay("prod", (k8s) => appendFileSync(path.join(k8s, "services/media-jobs/config.env"), "MEDIA_JOBS_RETENTION_DAYS=60\n"));
    expect(changed(before(), after)).toEqual(["ConfigMap media-jobs-config", "Deployment media-jobs"]);
  });

  it("a changed secret rolls only the deployable that reads it", () => {
    const after = renderOverlay(
      "prod",
      edit("overlays/prod/secrets/files-worker.env", (t) => t.replace(/^OBJECT_STORE_SECRET_KEY=.*$/m, "OBJECT_STORE_SECRET_KEY=rotated-0123456789")),
    );
    expect(changed(before(), after)).toEqual(["Deployment files-worker", "Secret files-worker-secrets"]);
  });
});

interface ScaledObject extends K8sObject {
  spec: {
    scaleTargetRef: { name: string };
    minReplicaCount?: number;
    advanced?: { horizontalPodAutoscalerConfig?: { behavior?: Autoscaler["spec"]["behavior"] } };
    triggers: { type: string; metadata: Record<string, string> }[];
  };
}

describe.each(OVERLAYS)("the KEDA component in k8s/overlays/%s", (overlay) => {
  const withKeda = renderOverlay(overlay, (k8s) => addComponent(k8s, overlay, "keda"));
  const hpaTargets = (o: K8sObject[]) => o.filter((x): x is Autoscaler => x.kind === "HorizontalPodAutoscaler").map((h) => h.spec.scaleTargetRef.name);

  it("scales each worker on its queue's length (CPU still counting), with no CPU autoscaler beside it", () => {
    for (const [worker, queue] of [
      ["files-worker", "files.verification"],
      ["media-jobs-worker", "media-jobs.jobs"],
    ] as const) {
      const scaled = withKeda.filter((x): x is ScaledObject => x.kind === "ScaledObject" && (x as ScaledObject).spec.scaleTargetRef.name === worker);
      expect(scaled).toHaveLength(1);
      expect(scaled[0]!.metadata.namespace).toBe("meter");
      expect(scaled[0]!.spec.triggers.map((t) => [t.type, t.metadata.queueName])).toEqual([
        ["rabbitmq", queue],
        ["cpu", undefined],
      ]);
      expect(scaled[0]!.spec.minReplicaCount).toBeGreaterThanOrEqual(2);
      expect(scaled[0]!.spec.advanced?.horizontalPodAutoscalerConfig?.behavior?.scaleDown?.stabilizationWindowSeconds).toBeGreaterThanOrEqual(60);
      expect(hpaTargets(withKeda)).not.toContain(worker);
    }
  });

  it("leaves every other deployable on its CPU autoscaler, and without the component the workers too", () => {
    expect(hpaTargets(withKeda).sort()).toEqual(["billing-ledger", "clamd", "files", "gateway", "mcp", "media-jobs", "text"]);
    expect(hpaTargets(objectsOf(overlay))).toEqual(expect.arrayContaining(["files-worker", "media-jobs-worker"]));
    expect(objectsOf(overlay).some((x) => x.kind === "ScaledObject")).toBe(false);
  });
});

const withComponent = (overlay: Overlay, component: string): K8sObject[] => renderOverlay(overlay, (k8s) => addComponent(k8s, overlay, component));
const labelsOf = (o: K8sObject): Record<string, string> => (o.metadata as { labels?: Record<string, string> }).labels ?? {};

describe.each(OVERLAYS)("labels of k8s/overlays/%s", (overlay) => {
  it("puts instance and managed-by on every object and pod, and each Deployment's release (its image's tag) as its version, selectors untouched", () => {
    const objects = objectsOf(overlay);
    for (const o of objects) {
      expect([o.kind, o.metadata.name, labelsOf(o)["app.kubernetes.io/instance"], labelsOf(o)["app.kubernetes.io/managed-by"]]).toEqual([
        o.kind,
        o.metadata.name,
        isProduction(overlay) ? "meter" : "meter-dev",
        "kustomize",
      ]);
    }
    for (const d of objects.filter((o): o is Workload => o.kind === "Deployment")) {
      const tag = d.spec.template.spec.containers[0]!.image.split(":").at(-1);
      expect([d.metadata.name, labelsOf(d)["app.kubernetes.io/version"], d.spec.template.metadata?.labels?.["app.kubernetes.io/version"]]).toEqual([
        d.metadata.name,
        tag,
        tag,
      ]);
      expect((d.spec as { selector?: unknown }).selector).toEqual({ matchLabels: { "app.kubernetes.io/name": d.metadata.name } });
    }
  });
});

interface PodMonitor extends K8sObject {
  spec: {
    selector: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values: string[] }[] };
    podMetricsEndpoints: { port: string; path: string }[];
  };
}

describe("the Prometheus component (prod)", () => {
  const objects = withComponent("prod", "prometheus");

  it("scrapes /metrics of every deployable but clamd on a port its container declares, which the monitoring namespace may reach", () => {
    const monitors = objects.filter((o): o is PodMonitor => o.kind === "PodMonitor");
    const policies = objects.filter((o): o is NetworkPolicy => o.kind === "NetworkPolicy");
    for (const d of objects.filter((o): o is Workload => o.kind === "Deployment")) {
      const labels = d.spec.template.metadata?.labels ?? {};
      const scraping = monitors.filter((m) => selects(m.spec.selector, labels));
      if (d.metadata.name === "clamd") {
        expect(scraping).toEqual([]);
        continue;
      }
      expect([d.metadata.name, scraping.length]).toEqual([d.metadata.name, 1]);
      const endpoint = scraping[0]!.spec.podMetricsEndpoints[0]!;
      expect(endpoint.path).toBe("/metrics");
      const port = d.spec.template.spec.containers[0]!.ports!.find((p) => p.name === endpoint.port);
      expect([d.metadata.name, port?.containerPort]).toEqual([d.metadata.name, d.metadata.name === "gateway" ? 9080 : expect.any(Number)]);
      const admitting = policies.filter(
        (p) =>
          selects(p.spec.podSelector, labels) &&
          (p.spec.ingress ?? []).some(
            (r) =>
              r.from?.some((f) => (f as { namespaceSelector?: unknown }).namespaceSelector !== undefined && JSON.stringify(f).includes('"monitoring"')) &&
              r.ports?.some((p) => p.port === endpoint.port || p.port === port?.containerPort),
          ),
      );
      expect([d.metadata.name, admitting.length]).toEqual([d.metadata.name, 1]);
    }
  });
});

/** The namespaces a rendered overlay's NetworkPolicies admit, by policy: `gateway` -> ["ingress-nginx", "monitoring"]. */
const admittedNamespaces = (objects: K8sObject[]): Record<string, string[]> =>
  Object.fromEntries(
    objects
      .filter((o): o is NetworkPolicy => o.kind === "NetworkPolicy")
      .map((p) => [
        p.metadata.name,
        (p.spec.ingress ?? [])
          .flatMap((r) => (r.from ?? []).map((f) => f.namespaceSelector?.matchLabels?.["kubernetes.io/metadata.name"]))
          .filter((n) => n !== undefined),
      ])
      .filter(([, names]) => names!.length > 0),
  ) as Record<string, string[]>;

describe.each(OVERLAYS)("the namespaces k8s/overlays/%s admits are its settings", (overlay) => {
  const withSettings = renderOverlay(
    overlay,
    edit(`overlays/${overlay}/kustomization.yaml`, (t) =>
      t.replace("- monitoring=monitoring", "- monitoring=prometheus").replace("- ingress=ingress-nginx", "- ingress=traefik"),
    ),
  );

  it("admits Prometheus's namespace to every deployable's metrics and the Ingress controller's to the gateway, as set", () => {
    const before = admittedNamespaces(objectsOf(overlay));
    expect(before.gateway).toEqual(["ingress-nginx", "monitoring"]);
    const after = admittedNamespaces(withSettings);
    expect(after.gateway).toEqual(["traefik", "prometheus"]);
    // Every policy that admitted `monitoring` now admits the setting's namespace, and none names the old ones.
    for (const [policy, names] of Object.entries(before))
      expect([policy, after[policy]]).toEqual([policy, names.map((n) => ({ monitoring: "prometheus", "ingress-nginx": "traefik" })[n] ?? n)]);
    expect(JSON.stringify(withSettings.filter((o) => o.kind === "NetworkPolicy"))).not.toMatch(/"(monitoring|ingress-nginx)"/);
  });

  it("changes nothing but those policies, and applies no object of its settings", () => {
    expect(changed(objectsOf(overlay), withSettings)).toEqual(
      Object.keys(admittedNamespaces(withSettings))
        .map((p) => `NetworkPolicy ${p}`)
        .sort(),
    );
    expect(withSettings.some((o) => o.metadata.name.startsWith("meter-namespaces"))).toBe(false);
  });
});

describe("the image pull secret component (prod)", () => {
  const objects = withComponent("prod", "image-pull-secret");

  it("gives every pod the registry Secret through its own ServiceAccount, and leaves everything else as it was", async () => {
    const accounts = objects.filter((o) => o.kind === "ServiceAccount") as (K8sObject & { imagePullSecrets?: { name: string }[] })[];
    for (const w of objects.filter((o): o is Workload => ["Deployment", "Job", "StatefulSet"].includes(o.kind))) {
      const account = accounts.find((a) => a.metadata.name === w.spec.template.spec.serviceAccountName);
      expect([w.metadata.name, account?.imagePullSecrets]).toEqual([w.metadata.name, [{ name: "meter-registry" }]]);
    }
    expect(changed(objectsOf("prod"), objects)).toEqual(accounts.map((a) => `ServiceAccount ${a.metadata.name}`).sort());
    expect(await checkOverlay(objects, "prod")).toEqual([]);
  });
});
