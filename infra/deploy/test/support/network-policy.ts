import { selects, type NetworkPeer, type NetworkPolicy, type NetworkRule } from "./manifests";

/**
 * What the NetworkPolicies of one namespace allow, evaluated as the API defines it: a pod selected by
 * some policy of a type (Ingress, Egress) accepts, in that direction, only what one of those policies'
 * rules allows; a rule with no peers allows every peer, one with no ports every port.
 */
export type Labels = Record<string, string>;

const appliesTo = (p: NetworkPolicy, pod: Labels, type: "Ingress" | "Egress"): boolean =>
  selects(p.spec.podSelector, pod) && (p.spec.policyTypes ?? (type === "Ingress" ? ["Ingress"] : p.spec.egress ? ["Egress"] : [])).includes(type);

const portAllowed = (rule: NetworkRule, port: number): boolean =>
  !rule.ports || rule.ports.length === 0 || rule.ports.some((p) => p.port === undefined || p.port === port);

/** A peer of the same namespace: a pod selector without a namespace selector. */
const samePodPeer = (peer: NetworkPeer, pod: Labels): boolean =>
  peer.namespaceSelector === undefined && peer.ipBlock === undefined && selects(peer.podSelector, pod);

function allowed(policies: NetworkPolicy[], subject: Labels, type: "Ingress" | "Egress", peerMatches: (peer: NetworkPeer) => boolean, port: number): boolean {
  const governing = policies.filter((p) => appliesTo(p, subject, type));
  if (governing.length === 0) return true;
  return governing.some((p) =>
    (type === "Ingress" ? p.spec.ingress : p.spec.egress)?.some((rule) => {
      const peers = type === "Ingress" ? rule.from : rule.to;
      return portAllowed(rule, port) && (!peers || peers.length === 0 || peers.some(peerMatches));
    }),
  );
}

/** May a pod with labels `from` open a connection to a pod with labels `to` on `port` (both in the namespace)? */
export function canConnect(policies: NetworkPolicy[], from: Labels, to: Labels, port: number): boolean {
  return allowed(policies, from, "Egress", (peer) => samePodPeer(peer, to), port) && allowed(policies, to, "Ingress", (peer) => samePodPeer(peer, from), port);
}

/** May a pod reach an address outside the cluster on `port`, through some ipBlock rule? */
export function canReachOutside(policies: NetworkPolicy[], from: Labels, port: number): boolean {
  return allowed(policies, from, "Egress", (peer) => peer.ipBlock !== undefined, port);
}
