import { checkKubernetes } from "./support/k8s-checks";
import { isWorkload, loadManifests, type Container, type ManifestFolder, type Service, type Workload } from "./support/manifests";

/**
 * The manifests of k8s/ are checked against the code they deploy, as a cluster would use them: both
 * kustomizations (k8s and k8s/dev-dependencies) together, with the example Secrets standing in for
 * the operator's. Each component's environment goes through its own loadConfig.
 */
describe("k8s/", () => {
  const folders = loadManifests();

  it("has the main kustomization and the test cluster's dependencies", () => {
    expect(folders.map((f) => f.dir)).toEqual(["k8s", "k8s/dev-dependencies"]);
  });

  it("would run every component with a configuration it accepts, reachable and probed where it listens", async () => {
    expect(await checkKubernetes(folders)).toEqual([]);
  });

  describe("fails on a broken manifest", () => {
    const find = <T>(copy: ManifestFolder[], kind: string, name: string): T => {
      const found = copy.flatMap((f) => f.objects.map((o) => o.object)).find((o) => o.kind === kind && o.metadata.name === name);
      if (!found) throw new Error(`no ${kind} ${name} in k8s/`);
      return found as T;
    };
    const container = (copy: ManifestFolder[], name: string): Container => find<Workload>(copy, "Deployment", name).spec.template.spec.containers[0]!;
    const exampleSecret = (copy: ManifestFolder[], name: string): Record<string, string> => {
      const found = copy.flatMap((f) => f.examples.map((e) => e.object)).find((o) => o.metadata.name === name);
      if (!found) throw new Error(`no example Secret ${name} in k8s/`);
      return (found as unknown as { stringData: Record<string, string> }).stringData;
    };
    const cases: [string, (copy: ManifestFolder[]) => void, RegExp][] = [
      [
        "a selector that misses its pods",
        (c) => void (find<Workload>(c, "Deployment", "text").spec.selector = { matchLabels: { "app.kubernetes.io/name": "txt" } }),
        /Deployment text: selector does not match/,
      ],
      ["a Service selecting nothing", (c) => void (find<Service>(c, "Service", "files").spec.selector = { app: "nope" }), /Service files: selects no Deployment/],
      ["a Service port to an undeclared container port", (c) => void (find<Service>(c, "Service", "gateway").spec.ports[0]!.targetPort = 9999), /targets 9999/],
      ["readiness on the wrong path", (c) => void (container(c, "billing-ledger").readinessProbe = { httpGet: { path: "/healthz", port: "http" } }), /readinessProbe asks \/healthz/],
      ["a worker probed where it does not listen", (c) => void (container(c, "files-worker").ports = [{ name: "http", containerPort: 8083 }]), /files-worker: does not declare containerPort 8093/],
      ["a container port that is not the service's", (c) => void (container(c, "text").ports = [{ name: "http", containerPort: 8181 }]), /does not declare containerPort 8081/],
      ["a missing secret key", (c) => void (container(c, "gateway").env = container(c, "gateway").env?.filter((v) => v.name !== "ADMIN_TOKEN")), /gateway\/src\/main\.ts would not start: [\s\S]*ADMIN_TOKEN/],
      ["a ConfigMap URL to a Service that does not exist", (c) => void (find<{ data: Record<string, string> }>(c, "ConfigMap", "meter-config").data.TEXT_URL = "http://text-service:8081"), /TEXT_URL names host "text-service"/],
      ["a container without limits", (c) => delete container(c, "files").resources, /files has no cpu requests/],
      ["a container that may run as root", (c) => delete find<Workload>(c, "Deployment", "gateway").spec.template.spec.securityContext, /gateway may run as root/],
      ["a third-party image on latest", (c) => void (find<Workload>(c, "StatefulSet", "minio").spec.template.spec.containers[0]!.image = "minio/minio:latest"), /minio\/minio:latest is not pinned/],
      ["a manifest left out of kustomization.yaml", (c) => void (c[0]!.kustomization.resources = c[0]!.kustomization.resources?.filter((r) => r !== "files-worker.yaml")), /k8s\/files-worker\.yaml is not listed/],
      ["signatures that differ from infra/clamav", (c) => void (find<{ data: Record<string, string> }>(c, "ConfigMap", "clamd-signatures").data["meter-test.ndb"] = "x"), /differs from the signature files/],
      [
        "a database password the test cluster's PostgreSQL was not started with",
        (c) => void (exampleSecret(c, "meter-dev-dependencies").POSTGRES_PASSWORD = "other"),
        /TEXT_DATABASE_URL logs in with other credentials than postgres/,
      ],
      [
        "migrations on another database",
        (c) => void (find<Workload>(c, "Job", "meter-migrate").spec.template.spec.containers[0]!.env!.find((v) => v.name === "FILES_DATABASE_URL")!.valueFrom!.secretKeyRef!.key = "TEXT_DATABASE_URL"),
        /FILES_DATABASE_URL differs from the one Deployment files uses/,
      ],
      ["a component nobody runs", (c) => void (c[0]!.objects = c[0]!.objects.filter(({ object }) => !(isWorkload(object) && object.metadata.name === "files-worker"))), /no Kubernetes workload runs services\/files\/src\/worker\.ts/],
    ];
    it.each(cases)("%s", async (_name, breakIt, expected) => {
      const copy = JSON.parse(JSON.stringify(folders)) as ManifestFolder[];
      breakIt(copy);
      expect((await checkKubernetes(copy)).join("\n")).toMatch(expected);
    });
  });
});
