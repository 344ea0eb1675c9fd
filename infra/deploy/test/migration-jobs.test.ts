import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { checkOverlay, unhashed } from "./support/k8s-checks";
import { DEPLOY_COMMAND, VERSION_LABEL, WAIT_COMMAND } from "./support/k8s-migration-checks";
import { copyExampleSecrets, OVERLAYS, renderOverlay, type Overlay } from "./support/kustomize";
import { isService, isWorkload, podContainers, secretValues, type K8sObject, type NetworkPolicy, type Secret, type Workload } from "./support/manifests";

/**
 * Migrations as a Job per service and release (docs/deploy.md, Migrations), in each rendered overlay:
 * the owner role's credentials only in that Job, every pod of a service with a database waiting for
 * its schema as its runtime role. The checks themselves are support/k8s-migration-checks.ts (part of
 * checkOverlay); here, what they hold on the overlays, and that they catch each way of breaking it.
 */
const OWNERS = ["billing-ledger", "files", "mcp", "media-jobs", "text"];
const WITH_DATABASE = ["billing-ledger", "files", "files-worker", "mcp", "media-jobs", "media-jobs-worker", "text"];
const rendered = new Map<Overlay, K8sObject[]>(OVERLAYS.map((o) => [o, renderOverlay(o)]));
const objectsOf = (o: Overlay): K8sObject[] => JSON.parse(JSON.stringify(rendered.get(o))) as K8sObject[];
const workloads = (o: K8sObject[], kind: string) => o.filter(isWorkload).filter((w) => w.kind === kind);
const releaseOf = (w: Workload) => w.metadata.labels![VERSION_LABEL]!;
const secretNames = (c: ReturnType<typeof podContainers>[number]) =>
  [...(c.envFrom ?? []).map((f) => f.secretRef?.name), ...(c.env ?? []).map((v) => v.valueFrom?.secretKeyRef?.name)].filter((n) => n !== undefined);

describe.each(OVERLAYS)("migrations in k8s/overlays/%s", (overlay) => {
  const objects = objectsOf(overlay);
  const deployments = workloads(objects, "Deployment");
  const jobs = workloads(objects, "Job").filter((j) => j.metadata.name.includes("-migrate-"));

  it("has one Job per service that owns a database, named after its Deployment's release label, running its migrations as the owner role", () => {
    expect(jobs.map((j) => j.metadata.name).sort()).toEqual(OWNERS.map((d) => `${d}-migrate-${releaseOf(deployments.find((x) => x.metadata.name === d)!)}`));
    for (const job of jobs) {
      const deployable = job.metadata.name.replace(/-migrate-.*$/, "");
      const [c, ...others] = job.spec.template.spec.containers;
      expect(others).toEqual([]);
      expect(c!.command).toEqual(DEPLOY_COMMAND);
      expect(c!.image).toBe(deployments.find((d) => d.metadata.name === deployable)!.spec.template.spec.containers[0]!.image);
      expect(secretNames(c!).map((n) => n && unhashed(n))).toEqual([`${deployable}-migration`]);
      const secret = objects.find((o): o is Secret => o.kind === "Secret" && unhashed(o.metadata.name) === `${deployable}-migration`)!;
      expect(Object.keys(secretValues(secret))).toEqual([`${deployable.toUpperCase().replace(/-/g, "_")}_MIGRATION_DATABASE_URL`]);
      expect(secretValues(secret)[Object.keys(secretValues(secret))[0]!]).toMatch(/_owner:/);
      expect(job.spec).toMatchObject({
        backoffLimit: expect.any(Number),
        activeDeadlineSeconds: expect.any(Number),
        ttlSecondsAfterFinished: expect.any(Number),
      });
    }
  });

  it("gives the owner role's Secret to no Deployment, and makes every Deployment of a service with a database wait for its schema", () => {
    const ownerSecrets = new Set(OWNERS.map((d) => `${d}-migration`));
    const readers = objects
      .filter(isWorkload)
      .filter((w) => podContainers(w).some((c) => secretNames(c).some((n) => n && ownerSecrets.has(unhashed(n)))))
      .map((w) => `${w.kind} ${w.metadata.name}`)
      .sort();
    expect(readers).toEqual(jobs.map((j) => `Job ${j.metadata.name}`).sort());

    const waiting = deployments.filter((d) =>
      (d.spec.template.spec.initContainers ?? []).some((c) => JSON.stringify(c.command) === JSON.stringify(WAIT_COMMAND)),
    );
    expect(waiting.map((d) => d.metadata.name).sort()).toEqual(WITH_DATABASE);
    for (const d of waiting) {
      const init = d.spec.template.spec.initContainers!;
      expect(init.map((c) => c.command)).toEqual([WAIT_COMMAND]);
      expect(secretNames(init[0]!).map((n) => n && unhashed(n))).toEqual([`${d.metadata.name}-secrets`]);
    }
  });

  it("keeps the Jobs' pods out of their services: no Service, budget or Deployment selects them", () => {
    expect(jobs).toHaveLength(OWNERS.length);
    for (const job of jobs) {
      const labels = job.spec.template.metadata!.labels!;
      expect(labels["app.kubernetes.io/component"]).toBe("migration");
      const selecting = objects.filter(isService).filter((s) => Object.entries(s.spec.selector ?? {}).every(([k, v]) => labels[k] === v));
      expect(selecting).toEqual([]);
    }
  });

  it("passes every check of the overlay (the rendered Jobs included)", async () => {
    expect(await checkOverlay(objectsOf(overlay), overlay)).toEqual([]);
  });
});

const find = (objects: K8sObject[], kind: string, name: string): Workload => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found as Workload;
};
const migrationSecret = (o: K8sObject[]) => o.find((x) => x.kind === "Secret" && x.metadata.name === "text-migration")!.metadata.name;

describe("the migration checks fail on", () => {
  const cases: [string, Overlay, (o: K8sObject[]) => void, RegExp][] = [
    [
      "the owner role's Secret given to the API's process",
      "prod",
      (o) => find(o, "Deployment", "text").spec.template.spec.containers[0]!.envFrom!.push({ secretRef: { name: migrationSecret(o) } }),
      /Deployment text: text reads the owner role's Secret text-migration[\s\S]*Deployment text: text gets TEXT_MIGRATION_DATABASE_URL/,
    ],
    [
      "the owner role's Secret given to a worker's wait",
      "dev",
      (o) => find(o, "Deployment", "files-worker").spec.template.spec.initContainers![0]!.envFrom!.push({ secretRef: { name: "files-migration" } }),
      /Deployment files-worker: wait-for-migrations reads the owner role's Secret files-migration/,
    ],
    [
      "the migrations run by the API's pods again",
      "prod",
      (o) => void (find(o, "Deployment", "billing-ledger").spec.template.spec.initContainers![0]!.command = DEPLOY_COMMAND),
      /Deployment billing-ledger: an initContainer runs node dist\/migrate\.js deploy; only the migration Job may/,
    ],
    [
      "a release without its Job",
      "dev",
      (o) => void o.splice(o.indexOf(find(o, "Job", "mcp-migrate-dev")), 1),
      /Deployment mcp: 0 migration Jobs run its image; one per release/,
    ],
    [
      "a Job not named after its release (a new release would reuse the old Job)",
      "prod",
      (o) => void (find(o, "Job", "files-migrate-1.1.0").metadata.name = "files-migrate"),
      /Job files-migrate: migrates release 1\.1\.0 of Deployment files; its Job is named files-migrate-1\.1\.0/,
    ],
    [
      "a Job of another version than the Deployment",
      "prod",
      (o) => {
        const job = find(o, "Job", "text-migrate-1.1.0");
        job.spec.template.spec.containers[0]!.image = "registry.example.com/meter/text:0.9.0";
        job.spec.template.metadata!.labels![VERSION_LABEL] = "0.9.0";
      },
      /Job text-migrate-1\.1\.0: labelled release 0\.9\.0, Deployment text 1\.1\.0[\s\S]*migrates with \S+text:0\.9\.0, Deployment text runs \S+text:1\.1\.0/,
    ],
    [
      "a Deployment without its release label",
      "dev",
      (o) => void delete find(o, "Deployment", "mcp").metadata.labels![VERSION_LABEL],
      /Deployment mcp: no app\.kubernetes\.io\/version label: its release names its migration Job/,
    ],
    [
      "a release that does not fit in a Job's name",
      "prod",
      (o) => {
        find(o, "Deployment", "media-jobs").metadata.labels![VERSION_LABEL] = "1".repeat(50);
        find(o, "Job", "media-jobs-migrate-1.1.0").metadata.name = `media-jobs-migrate-${"1".repeat(50)}`;
      },
      /Job media-jobs-migrate-1{50}: not a Job name .*63 characters at most/,
    ],
    [
      "a Job run without the production setting, so its secrets go unchecked",
      "prod",
      (o) => {
        const c = find(o, "Job", "files-migrate-1.1.0").spec.template.spec.containers[0]!;
        c.envFrom = c.envFrom!.filter((f) => f.configMapRef === undefined);
      },
      /Job files-migrate-1\.1\.0: NODE_ENV undefined, Deployment files production: it would skip the checks its Deployment runs/,
    ],
    [
      "a Job without a writable /tmp under its read-only root",
      "dev",
      (o) => void delete find(o, "Job", "mcp-migrate-dev").spec.template.spec.containers[0]!.volumeMounts,
      /Job mcp-migrate-dev: no writable \/tmp/,
    ],
    [
      "a Job with the runtime role's Secret too",
      "prod",
      (o) => {
        const job = find(o, "Job", "text-migrate-1.1.0");
        const runtime = o.find((x) => x.kind === "Secret" && unhashed(x.metadata.name) === "text-secrets")!.metadata.name;
        job.spec.template.spec.containers[0]!.envFrom!.push({ secretRef: { name: runtime } });
      },
      /Job text-migrate-1\.1\.0: reads text-secrets; it needs the owner role's Secret alone/,
    ],
    [
      "a Job migrating as the runtime role",
      "dev",
      (o) => {
        const secret = o.find((x): x is Secret => x.kind === "Secret" && x.metadata.name === "text-migration")!;
        const runtime = secretValues(o.find((x): x is Secret => x.kind === "Secret" && unhashed(x.metadata.name) === "text-secrets")!).TEXT_DATABASE_URL!;
        secret.data = { TEXT_MIGRATION_DATABASE_URL: Buffer.from(runtime).toString("base64") };
      },
      /Deployment text: runs as its migration role meter_text_app/,
    ],
    [
      "a Job without limits on its tries, its time or its life",
      "prod",
      (o) => {
        const job = find(o, "Job", "billing-ledger-migrate-1.1.0");
        delete job.spec.backoffLimit;
        delete job.spec.activeDeadlineSeconds;
        delete job.spec.ttlSecondsAfterFinished;
      },
      /backoffLimit undefined[\s\S]*no activeDeadlineSeconds[\s\S]*no ttlSecondsAfterFinished/,
    ],
    [
      "a Job less hardened than the pods",
      "dev",
      (o) => {
        const pod = find(o, "Job", "files-migrate-dev").spec.template.spec;
        delete pod.securityContext!.seccompProfile;
        pod.containers[0]!.securityContext = { allowPrivilegeEscalation: false };
      },
      /Job files-migrate-dev: no seccomp profile RuntimeDefault[\s\S]*writable root filesystem[\s\S]*keeps Linux capabilities/,
    ],
    [
      "a Job whose pods the Service would send requests to",
      "prod",
      (o) => void (find(o, "Job", "mcp-migrate-1.1.0").spec.template.metadata!.labels!["app.kubernetes.io/name"] = "mcp"),
      /Job mcp-migrate-1\.1\.0: Service mcp would send requests to its pods[\s\S]*PodDisruptionBudget mcp counts its pods/,
    ],
    [
      "a Job its network policies keep from the database",
      "dev",
      (o) => {
        for (const name of ["to-postgres", "postgres"]) {
          const policy = o.find((x): x is NetworkPolicy => x.kind === "NetworkPolicy" && x.metadata.name === name)!;
          const selector = name === "postgres" ? policy.spec.ingress![0]!.from![0]!.podSelector! : policy.spec.podSelector;
          selector.matchExpressions![0]!.values = selector.matchExpressions![0]!.values!.filter((v) => v !== "text-migrate");
        }
      },
      /Job text-migrate-dev cannot reach postgres:5432, which it uses \(TEXT_MIGRATION_DATABASE_URL\)/,
    ],
    [
      "pods that give up before the Job's deadline",
      "prod",
      (o) =>
        void (find(o, "Deployment", "media-jobs-worker").spec.template.spec.initContainers![0]!.env = [{ name: "MIGRATION_WAIT_TIMEOUT_MS", value: "60000" }]),
      /Deployment media-jobs-worker \(wait-for-migrations\): gives up after 60 s, before its migration Job's deadline \(600 s\)/,
    ],
  ];
  it.each(cases)("%s", async (_name, overlay, breakIt, expected) => {
    const objects = objectsOf(overlay);
    breakIt(objects);
    expect((await checkOverlay(objects, overlay)).join("\n")).toMatch(expected);
  });

  it("an overlay without migration-jobs.yaml: the Jobs keep their bare names, and a new release would reuse the old Job", async () => {
    const objects = renderOverlay("prod", (k8s) => {
      const file = path.join(k8s, "overlays/prod/kustomization.yaml");
      writeFileSync(file, readFileSync(file, "utf8").replace("  - path: migration-jobs.yaml\n", ""));
    });
    expect((await checkOverlay(objects, "prod")).join("\n")).toMatch(
      /Job text-migrate: migrates release 1\.1\.0 of Deployment text; its Job is named text-migrate-1\.1\.0/,
    );
  });

  it("secrets the Deployment's process would refuse (the example's placeholders): the Job refuses them too", async () => {
    const objects = renderOverlay("prod", undefined, copyExampleSecrets);
    expect((await checkOverlay(objects, "prod")).join("\n")).toMatch(
      /Job text-migrate-1\.1\.0: would not migrate: TEXT_MIGRATION_DATABASE_URL: holds a placeholder/,
    );
  });
});

/** A release as a registry gives it: a host with a port, the tag and its digest (docs/deploy.md, Releasing one deployable). */
describe.each(OVERLAYS)("a release pushed to a registry with a port and pinned by digest, in k8s/overlays/%s", (overlay) => {
  const digest = `sha256:${"3f".repeat(32)}`;
  const objects = renderOverlay(overlay, (k8s) => {
    const file = path.join(k8s, "overlays", overlay, "kustomization.yaml");
    const images = readFileSync(file, "utf8").replace(
      /(- name: meter-(text|billing-ledger)\n\s+newName:) \S+\n(\s+)newTag: \S+/g,
      (_m, head: string, name: string, indent: string) =>
        `${head} registry.example.com:5000/meter/${name}\n${indent}newTag: "1.4.1"\n${indent}digest: ${digest}`,
    );
    writeFileSync(file, images);
    const releases = path.join(k8s, "overlays", overlay, "releases.yaml");
    writeFileSync(
      releases,
      readFileSync(releases, "utf8").replace(/(name: (text|billing-ledger)\n\s+labels:\n\s+app\.kubernetes\.io\/version:) \S+/g, '$1 "1.4.1"'),
    );
  });

  it("names the Jobs after the release, not the image reference, and labels them and the pods with it", () => {
    const jobs = workloads(objects, "Job").filter((j) => j.metadata.name.includes("-migrate-"));
    for (const name of ["text", "billing-ledger"]) {
      const job = jobs.find((j) => j.metadata.name.startsWith(`${name}-migrate-`))!;
      expect([job.metadata.name, job.spec.template.spec.containers[0]!.image]).toEqual([
        `${name}-migrate-1.4.1`,
        `registry.example.com:5000/meter/${name}:1.4.1@${digest}`,
      ]);
      expect([job.metadata.labels![VERSION_LABEL], job.spec.template.metadata!.labels![VERSION_LABEL]]).toEqual(["1.4.1", "1.4.1"]);
      expect(workloads(objects, "Deployment").find((d) => d.metadata.name === name)!.spec.template.metadata!.labels![VERSION_LABEL]).toBe("1.4.1");
    }
  });

  it("passes every check of the overlay: the Jobs' names are valid, and kubectl apply would take them", async () => {
    expect(await checkOverlay(objects, overlay)).toEqual([]);
  });
});
