import { z } from "zod";

/**
 * The one list of the system's services: name, local port and the prefix of their settings
 * (`…_PORT`, `…_URL`, `…_DATABASE_URL`). The gateway's routes, the local runner, the database tools,
 * the test stack and the deployment checks all read it from here.
 */
export const ServiceCatalog = {
  gateway: { port: 8080, dir: "gateway", database: false, worker: false },
  text: { port: 8081, dir: "services/text", database: true, worker: false },
  "media-jobs": { port: 8082, dir: "services/media-jobs", database: true, worker: true },
  files: { port: 8083, dir: "services/files", database: true, worker: true },
  "billing-ledger": { port: 8084, dir: "services/billing-ledger", database: true, worker: false },
  mcp: { port: 8085, dir: "services/mcp", database: true, worker: false },
} as const satisfies Record<string, { port: number; dir: string; database: boolean; worker: boolean }>;

/** The gateway's second, internal port (`/readyz`, `/metrics`), never exposed. */
export const GATEWAY_INTERNAL_PORT = 9080;

export type ServiceName = keyof typeof ServiceCatalog;
export const ServiceName = z.enum(Object.keys(ServiceCatalog) as [ServiceName, ...ServiceName[]]);
export const SERVICE_NAMES: readonly ServiceName[] = ServiceName.options;

/**
 * What can be deployed and run on its own: each service, plus the queue workers of the services that
 * have one. Each deployable signs internal calls with a key of its own, so a worker that parses
 * untrusted files cannot speak for its API process, and no service can speak for the gateway.
 */
export const Deployable = z.enum(["gateway", "text", "media-jobs", "media-jobs-worker", "files", "files-worker", "billing-ledger", "mcp"]);
export type Deployable = z.infer<typeof Deployable>;
export const DEPLOYABLES: readonly Deployable[] = Deployable.options;

/** `media-jobs` -> `MEDIA_JOBS`: the prefix of a service's settings. */
export function envPrefix(service: ServiceName | Deployable): string {
  return service.toUpperCase().replace(/-/g, "_");
}

/** `billing-ledger` -> `meter_billing_ledger`: a service's database on a local server. */
export function defaultDatabaseName(service: ServiceName): string {
  return `meter_${service.replace(/-/g, "_")}`;
}
