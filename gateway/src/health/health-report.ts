import type { HealthReport, ServiceHealth } from "@meter/contracts";
import { isDraining, type InternalAuth } from "@meter/service-kit";
import type { ServiceName } from "../routes";
import { probeBroker } from "./broker-probe";
import { readProviders } from "./providers-probe";
import { probeReadiness } from "./readiness-probe";

/** Long enough for a loaded service on the same network, short enough for a page the operator waits on. */
export const PROBE_TIMEOUT_MS = 1500;

export interface HealthSources {
  /** Each service's URL (text: its replicas'), as the gateway forwards to them. */
  services: Record<ServiceName, string | readonly string[]>;
  /** The gateway's own broker URL (its credentials never leave this process). */
  brokerUrl: string;
  auth: InternalAuth;
  /** Whether this gateway hears key revocations on the bus. */
  hearingRevocations: () => boolean;
  timeoutMs?: number;
}

export type HealthReporter = () => Promise<HealthReport>;

/** The operator's health report: every part asked at once, each bounded in time, none able to fail the whole. */
export function healthReporter(sources: HealthSources): HealthReporter {
  const timeoutMs = sources.timeoutMs ?? PROBE_TIMEOUT_MS;
  const urlsOf = (u: string | readonly string[]): readonly string[] => (typeof u === "string" ? [u] : u);
  return async () => {
    const targets = (Object.entries(sources.services) as [ServiceName, string | readonly string[]][]).flatMap(([service, u]) =>
      urlsOf(u).map((url) => ({ service, url })),
    );
    const [services, broker, providers] = await Promise.all([
      Promise.all(targets.map(({ service, url }) => probeReadiness(service, url, timeoutMs))),
      probeBroker(sources.brokerUrl, timeoutMs),
      readProviders(sources.auth, urlsOf(sources.services.text), timeoutMs),
    ]);
    return { object: "health", checked_at: new Date().toISOString(), services: [gatewayItself(sources), ...services], broker, providers };
  };
}

/** The gateway is the one answering: ready unless it is shutting down. Revocations are shown, not required (composition.ts). */
function gatewayItself(sources: HealthSources): ServiceHealth {
  const draining = isDraining();
  return {
    service: "gateway",
    url: null,
    ready: !draining,
    ms: 0,
    checks: { key_revocations: sources.hearingRevocations() ? "ok" : "not listening" },
    error: draining ? "draining" : null,
  };
}
