import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { unhashed } from "./support/k8s-checks";
import { OVERLAYS, renderOverlay, type Overlay } from "./support/kustomize";
import { isWorkload, type K8sObject, type Secret } from "./support/manifests";
import { restrictedProblems, unboundedEmptyDirs } from "./support/pod-security";
import { repoPath } from "./support/repo";

/**
 * What a platform team's cluster expects of the overlays (docs/deploy.md): pods the `restricted` Pod
 * Security Standard admits in a namespace that enforces it, bounded scratch volumes, TLS to the
 * databases in production, and the Prometheus component found by kube-prometheus-stack, with alerts
 * on metrics the code registers.
 */
const withPrometheus = (overlay: Overlay, extraPatch = ""): K8sObject[] =>
  renderOverlay(overlay, (k8s) => {
    const file = path.join(k8s, "overlays", overlay, "kustomization.yaml");
    let text = readFileSync(file, "utf8");
    if (extraPatch) text = text.replace("\npatches:\n", `\npatches:\n${extraPatch}`);
    writeFileSync(file, `${text}components:\n  - ../../components/prometheus\n`);
  });
const labelsOf = (o: K8sObject): Record<string, string> => (o.metadata as { labels?: Record<string, string> }).labels ?? {};

describe.each(OVERLAYS)("k8s/overlays/%s on a cluster that enforces the restricted Pod Security Standard", (overlay) => {
  const objects = renderOverlay(overlay);

  it("labels the namespace to enforce it, and every pod of the overlay complies", () => {
    const namespace = objects.find((o) => o.kind === "Namespace")!;
    expect(labelsOf(namespace)).toMatchObject({ "pod-security.kubernetes.io/enforce": "restricted" });
    expect(objects.filter(isWorkload).flatMap(restrictedProblems)).toEqual([]);
  });

  it("bounds every emptyDir (a full one evicts its pod, not its node's others)", () => {
    expect(unboundedEmptyDirs(objects)).toEqual([]);
  });
});

describe("the restricted checks fail on", () => {
  it("a container that may escalate, keeps its capabilities, or a pod without seccomp", () => {
    const objects = renderOverlay("dev");
    const text = objects.filter(isWorkload).find((w) => w.metadata.name === "text" && w.kind === "Deployment")!;
    delete text.spec.template.spec.securityContext!.seccompProfile;
    text.spec.template.spec.containers[0]!.securityContext = { readOnlyRootFilesystem: true };
    expect(restrictedProblems(text).join("\n")).toMatch(
      /\(text\): no seccomp profile RuntimeDefault\n.*\(text\): allowPrivilegeEscalation is not false\n.*\(text\): does not drop ALL/,
    );
  });
});

describe("database connections of k8s/overlays/prod", () => {
  it("ask for TLS with the server's certificate checked (sslmode=verify-full) in every URL, runtime and owner roles", () => {
    const urls = renderOverlay("prod")
      .filter((o): o is Secret => o.kind === "Secret")
      .flatMap((s) => Object.entries(s.data ?? {}).map(([k, v]) => [`${unhashed(s.metadata.name)} ${k}`, Buffer.from(v, "base64").toString()] as const))
      .filter(([key]) => key.endsWith("DATABASE_URL"));
    expect(urls.length).toBeGreaterThanOrEqual(12);
    for (const [key, url] of urls) expect([key, new URL(url).searchParams.get("sslmode")]).toEqual([key, "verify-full"]);
  });
});

describe("the gateway's Redis in k8s/overlays/prod", () => {
  it("is reached over TLS with a password from the gateway's Secret, never from a ConfigMap", () => {
    const objects = renderOverlay("prod");
    const inConfigMaps = objects.filter((o) => o.kind === "ConfigMap").filter((c) => "REDIS_URL" in ((c as { data?: Record<string, string> }).data ?? {}));
    expect(inConfigMaps.map((c) => c.metadata.name)).toEqual([]);
    const secret = objects.find((o): o is Secret => o.kind === "Secret" && unhashed(o.metadata.name) === "gateway-secrets")!;
    const url = new URL(Buffer.from(secret.data!.REDIS_URL!, "base64").toString());
    expect({ protocol: url.protocol, password: url.password.length > 0 }).toEqual({ protocol: "rediss:", password: true });
  });
});

/** Every metric name a PromQL expression reads: what is left once labels, ranges, strings and functions are taken out. */
const PROMQL_WORDS = new Set(["sum", "max", "min", "avg", "count", "increase", "rate", "by", "without", "on", "ignoring", "or", "and", "unless", "absent"]);
function metricsOf(expr: string): string[] {
  const bare = expr
    .replace(/"[^"]*"/g, "")
    .replace(/\{[^}]*\}/g, "")
    .replace(/\[[^\]]*\]/g, "")
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, "");
  return [...new Set([...bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)].map((m) => m[0]).filter((w) => !PROMQL_WORDS.has(w)))];
}

/** The metric names the code registers (prom-client), as string literals of its sources. */
function registeredMetricNames(): Set<string> {
  const names = new Set<string>(["up"]);
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const file = path.join(dir, entry);
      if (entry === "node_modules" || entry === "test") continue;
      if (statSync(file).isDirectory()) walk(file);
      else if (file.endsWith(".ts") && !file.endsWith(".test.ts"))
        for (const m of readFileSync(file, "utf8").matchAll(/"([a-z][a-z0-9_]*_(?:total|seconds|messages))"/g)) names.add(m[1]!);
    }
  };
  for (const root of ["gateway/src", "packages", "services"]) walk(repoPath(root));
  return names;
}

interface PrometheusRule extends K8sObject {
  spec: { groups: { name: string; rules: { alert: string; expr: string; for?: string; labels?: Record<string, string> }[] }[] };
}

describe("the Prometheus component (prod)", () => {
  const objects = withPrometheus("prod");
  const monitoring = objects.filter((o) => o.apiVersion.startsWith("monitoring.coreos.com/"));

  it("labels its PodMonitors and PrometheusRule with the release kube-prometheus-stack selects on", () => {
    expect(monitoring.map((o) => `${o.kind} ${o.metadata.name}`).sort()).toEqual([
      "PodMonitor meter-gateway",
      "PodMonitor meter-services",
      "PrometheusRule meter",
    ]);
    for (const o of monitoring) expect([o.metadata.name, labelsOf(o).release]).toEqual([o.metadata.name, "kube-prometheus-stack"]);
  });

  it("lets the overlay name another release", () => {
    const patched = withPrometheus(
      "prod",
      "  - target: { group: monitoring.coreos.com }\n    patch: |-\n      - op: replace\n        path: /metadata/labels/release\n        value: prometheus\n",
    ).filter((o) => o.apiVersion.startsWith("monitoring.coreos.com/"));
    expect(patched.map((o) => labelsOf(o).release)).toEqual(["prometheus", "prometheus", "prometheus"]);
  });

  it("alerts on a deployable down, dead letters, expired and stuck holds and books differences, with metrics the code registers", () => {
    const rules = (monitoring.find((o) => o.kind === "PrometheusRule") as PrometheusRule).spec.groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert)).toEqual(
      expect.arrayContaining([
        "MeterDeployableDown",
        "MeterDeadLetters",
        "MeterDeadLettersWaiting",
        "MeterHoldsExpired",
        "MeterHoldsStuck",
        "MeterBooksCrossCheckDifferences",
      ]),
    );
    const known = registeredMetricNames();
    for (const rule of rules) {
      expect([rule.alert, metricsOf(rule.expr).filter((m) => !known.has(m))]).toEqual([rule.alert, []]);
      expect([rule.alert, rule.labels?.severity]).toEqual([rule.alert, expect.stringMatching(/^(warning|critical)$/)]);
    }
  });

  it("would catch an alert on a metric nothing registers", () => {
    expect(metricsOf('sum by (queue) (increase(rabbitmq_dead_letters_total{queue=~".+"}[1h])) > 0').filter((m) => !registeredMetricNames().has(m))).toEqual([
      "rabbitmq_dead_letters_total",
    ]);
  });
});
