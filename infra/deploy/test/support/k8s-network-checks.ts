import { addressesOf } from "./components";
import type { Running, Sources } from "./k8s-checks";
import { environmentOf } from "./k8s-checks";
import { isNetworkPolicy, isService, isWorkload, matches, podContainers, selects, type K8sObject, type NetworkPolicy, type Workload } from "./manifests";
import { canConnect, canReachOutside } from "./network-policy";
import { isOperatorPods, OPERATOR_POD_UPSTREAM } from "./operators";

/** Ports everybody may use: DNS, allowed to every pod by platform/network-policy.yaml. */
const DNS_PORT = 53;
/**
 * What a deployable calls without any setting naming it: text, the upstream providers (the catalog's
 * base_url); billing-ledger, the organizations' webhook receivers.
 */
const UPSTREAM: Record<string, number[]> = { text: [443], "billing-ledger": [443] };
/**
 * And: freshclam, beside clamd in production, ClamAV's database mirror over HTTPS (its freshclam.conf);
 * the operators' pods of prod-ha, the Kubernetes API (and CloudNativePG's, the object store).
 */
const upstreamOf = (w: Workload): number[] => [
  ...(UPSTREAM[w.metadata.name] ?? []),
  ...(isOperatorPods(w) ? (OPERATOR_POD_UPSTREAM[w.kind] ?? []) : []),
  ...(podContainers(w).some((c) => c.command?.[0] === "freshclam") ? [443] : []),
];

interface Use {
  key: string;
  host: string;
  port: number;
}

/** The addresses a workload connects to, from its containers' configurations (parsed for ours, raw env for the rest). */
function usesOf(w: Workload, running: Running[], sources: Sources): Use[] {
  const ours = running.filter((r) => r.workload === w);
  const fromConfig = ours.flatMap((r) => addressesOf(r.config ?? {}));
  const fromEnv = podContainers(w)
    .filter((c) => !ours.some((r) => r.container === c))
    .flatMap((c) => addressesOf(environmentOf("", c, sources).env));
  return [...fromConfig, ...fromEnv].filter((a): a is Use => a.port !== undefined && a.host !== "");
}

const labelsOf = (w: Workload): Record<string, string> => w.spec.template.metadata?.labels ?? {};
const describe = (w: Workload): string => `${w.kind} ${w.metadata.name}`;

/**
 * Least privilege, derived from what the processes use: inside the namespace, a pod may open exactly
 * the connections its settings name (a Service, then the pods behind it, on the port the Service
 * forwards to), no more and no less; outside it, only the ports its settings name (databases, the
 * broker, the object store of the platform) and the upstream providers of the text service.
 */
export function checkNetwork(objects: K8sObject[], running: Running[], sources: Sources): string[] {
  const problems: string[] = [];
  const policies = objects.filter(isNetworkPolicy) as NetworkPolicy[];
  // With the stand-ins for the operators' pods (support/operators.ts), which are no workload of the overlay.
  const workloads = objects.filter((o): o is Workload => isWorkload(o) || isOperatorPods(o));
  const services = objects.filter(isService);

  for (const w of workloads) {
    const governed = (type: string) => policies.some((p) => selects(p.spec.podSelector, labelsOf(w)) && (p.spec.policyTypes ?? []).includes(type));
    if (!governed("Ingress") || !governed("Egress")) problems.push(`${describe(w)}: no NetworkPolicy governs both its ingress and its egress`);
  }

  for (const client of workloads) {
    const uses = usesOf(client, running, sources);
    const internal = new Map<string, string>();
    for (const use of uses) {
      const service = services.find((s) => s.metadata.name === use.host);
      if (!service) continue;
      const port = service.spec.ports.find((p) => p.port === use.port);
      if (!port) continue;
      for (const backend of workloads.filter((w) => w.kind !== "Job" && matches(service.spec.selector, labelsOf(w)))) {
        const target = port.targetPort ?? port.port;
        const containerPort = backend.spec.template.spec.containers
          .flatMap((c) => c.ports ?? [])
          .find((p) => (typeof target === "number" ? p.containerPort === target : p.name === target))?.containerPort;
        if (containerPort !== undefined) internal.set(`${backend.metadata.name}:${containerPort}`, use.key);
      }
    }
    for (const server of workloads.filter((w) => w !== client && w.kind !== "Job")) {
      for (const p of server.spec.template.spec.containers.flatMap((c) => c.ports ?? [])) {
        const used = internal.get(`${server.metadata.name}:${p.containerPort}`);
        const allowed = canConnect(policies, labelsOf(client), labelsOf(server), p.containerPort);
        if (used && !allowed) problems.push(`${describe(client)} cannot reach ${server.metadata.name}:${p.containerPort}, which it uses (${used})`);
        if (!used && allowed) problems.push(`${describe(client)} may reach ${server.metadata.name}:${p.containerPort}, which it does not use`);
      }
    }

    const outside = uses.filter((u) => !services.some((s) => s.metadata.name === u.host));
    for (const u of outside) {
      if (!canReachOutside(policies, labelsOf(client), u.port))
        problems.push(`${describe(client)} cannot reach ${u.host}:${u.port} outside the cluster, which it uses (${u.key})`);
    }
    const wanted = new Set([...outside.map((u) => u.port), ...upstreamOf(client)]);
    for (const port of openOutsidePorts(policies, labelsOf(client))) {
      if (port !== DNS_PORT && !wanted.has(port))
        problems.push(`${describe(client)} may reach port ${port === 0 ? "(any)" : port} outside the cluster, which it does not use`);
    }
  }
  return problems;
}

/** The ports an egress rule with an address block opens to a pod (0: every port). */
function openOutsidePorts(policies: NetworkPolicy[], labels: Record<string, string>): number[] {
  return policies
    .filter((p) => selects(p.spec.podSelector, labels) && (p.spec.policyTypes ?? []).includes("Egress"))
    .flatMap((p) => p.spec.egress ?? [])
    .filter((rule) => !rule.to || rule.to.length === 0 || rule.to.some((peer) => peer.ipBlock !== undefined))
    .flatMap((rule) => (rule.ports && rule.ports.length > 0 ? rule.ports.map((p) => (typeof p.port === "number" ? p.port : 0)) : [0]));
}
