import { existsSync, readdirSync } from "node:fs";
import path from "node:path";

/** The workspace root, from this file's place in it (packages/db-tools/src). */
export const WORKSPACE_ROOT = path.resolve(__dirname, "..", "..", "..");
const SERVICES_DIR = path.join(WORKSPACE_ROOT, "services");

/** Local PostgreSQL as every machine of this project runs it (trust auth). */
export const LOCAL_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432";

/** `billing-ledger` -> `billing_ledger`. */
function serviceSnakeName(serviceDir: string): string {
  return path
    .basename(path.resolve(serviceDir))
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_");
}

/** The variable each service's prisma.config.ts and config.ts read: `billing-ledger` -> `BILLING_LEDGER_DATABASE_URL`. */
export function serviceDatabaseEnvVar(serviceDir: string): string {
  return `${serviceSnakeName(serviceDir).toUpperCase()}_DATABASE_URL`;
}

/** The service's database: its env var, else the local default `meter_<service_snake>` that its config also falls back to. */
export function serviceDatabaseUrl(serviceDir: string): string {
  return process.env[serviceDatabaseEnvVar(serviceDir)] || `${LOCAL_POSTGRES_URL}/meter_${serviceSnakeName(serviceDir)}`;
}

/** Every folder under services/ that owns a Prisma schema. */
export function listServices(): string[] {
  if (!existsSync(SERVICES_DIR)) return [];
  return readdirSync(SERVICES_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(path.join(SERVICES_DIR, entry.name, "prisma", "schema.prisma")))
    .map((entry) => path.join(SERVICES_DIR, entry.name))
    .sort();
}

/** A service argument: a folder name under services/ (`files`) or a path to a service folder. */
export function resolveService(nameOrPath: string): string {
  const candidates = [path.join(SERVICES_DIR, nameOrPath), path.resolve(nameOrPath)];
  const found = candidates.find((dir) => existsSync(path.join(dir, "prisma", "schema.prisma")));
  if (!found) throw new Error(`No service with a prisma/schema.prisma at ${candidates.join(" or ")}`);
  return found;
}
