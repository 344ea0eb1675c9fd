import type { K8sObject, Service, Workload } from "./manifests";

/**
 * What the operators of the prod-ha overlay make from its resources, as the network and address checks
 * need to see it: the Services a CloudNativePG `Cluster` and a `RabbitmqCluster` get, and a stand-in for
 * their pods with the labels and ports the operators give them (CloudNativePG: `cnpg.io/cluster`,
 * `cnpg.io/instanceRole`; the RabbitMQ Cluster Operator: `app.kubernetes.io/name` = the cluster's name).
 * The resources themselves were checked against the operators' CRDs when they were written (docs/deploy.md).
 */
export const OPERATOR_KINDS: Record<string, readonly string[]> = {
  "postgresql.cnpg.io/v1": ["Cluster", "ScheduledBackup"],
  "barmancloud.cnpg.io/v1": ["ObjectStore"],
  "rabbitmq.com/v1beta1": ["RabbitmqCluster", "Vhost", "Policy", "User", "Permission", "TopicPermission"],
  "cert-manager.io/v1": ["Issuer", "Certificate"],
};

export const isOperatorResource = (o: K8sObject): boolean => OPERATOR_KINDS[o.apiVersion]?.includes(o.kind) ?? false;

/** Ports the operators' pods open outside the namespace: the Kubernetes API (both), the object store (CloudNativePG's backups). */
export const OPERATOR_POD_UPSTREAM: Record<string, number[]> = { Cluster: [443, 6443], RabbitmqCluster: [443, 6443] };

export interface PostgresCluster extends K8sObject {
  spec: {
    instances: number;
    bootstrap?: { initdb?: { database?: string; owner?: string; secret?: { name: string } } };
    managed?: { roles?: { name: string; login?: boolean; ensure?: string; passwordSecret?: { name: string } }[] };
    plugins?: { name: string; isWALArchiver?: boolean; parameters?: Record<string, string> }[];
  };
}

export interface RabbitmqCluster extends K8sObject {
  spec: { replicas?: number; tls?: { secretName?: string; disableNonTLSListeners?: boolean } };
}

const service = (name: string, selector: Record<string, string>, ports: number[]): Service => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name, namespace: "meter" },
  spec: { selector, ports: ports.map((port) => ({ port })) },
});

/** The apiVersion of the stand-ins for the operators' pods: no object of the overlay has it. */
const OPERATOR_PODS = "operator-made/pods";
export const isOperatorPods = (o: K8sObject): o is Workload => o.apiVersion === OPERATOR_PODS;

const pods = (kind: string, name: string, labels: Record<string, string>, ports: number[]): Workload => ({
  apiVersion: OPERATOR_PODS,
  kind,
  metadata: { name, namespace: "meter" },
  spec: { template: { metadata: { labels }, spec: { containers: [{ name, image: kind, ports: ports.map((containerPort) => ({ containerPort })) }] } } },
});

export function operatorMade(objects: K8sObject[]): { services: Service[]; workloads: Workload[] } {
  const services: Service[] = [];
  const workloads: Workload[] = [];
  for (const c of objects.filter((o) => o.apiVersion === "postgresql.cnpg.io/v1" && o.kind === "Cluster")) {
    const name = c.metadata.name;
    // The primary stands for every instance: the -rw Service, which the deployables use, selects it.
    workloads.push(pods("Cluster", name, { "cnpg.io/cluster": name, "cnpg.io/podRole": "instance", "cnpg.io/instanceRole": "primary" }, [5432, 8000, 9187]));
    services.push(
      service(`${name}-rw`, { "cnpg.io/cluster": name, "cnpg.io/instanceRole": "primary" }, [5432]),
      service(`${name}-ro`, { "cnpg.io/cluster": name, "cnpg.io/instanceRole": "replica" }, [5432]),
      service(`${name}-r`, { "cnpg.io/cluster": name, "cnpg.io/podRole": "instance" }, [5432]),
    );
  }
  for (const r of objects.filter((o): o is RabbitmqCluster => o.apiVersion === "rabbitmq.com/v1beta1" && o.kind === "RabbitmqCluster")) {
    const name = r.metadata.name;
    const tls = r.spec.tls?.secretName ? [5671, 15671] : [];
    const plain = r.spec.tls?.disableNonTLSListeners ? [] : [5672, 15672];
    workloads.push(
      pods("RabbitmqCluster", name, { "app.kubernetes.io/name": name, "app.kubernetes.io/component": "rabbitmq" }, [...tls, ...plain, 15692, 4369, 25672]),
    );
    services.push(service(name, { "app.kubernetes.io/name": name }, [...tls, ...plain, 15692]));
  }
  return { services, workloads };
}
