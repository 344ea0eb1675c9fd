import { existsSync } from "node:fs";
import path from "node:path";
import { DEPLOYABLES, ServiceCatalog, envPrefix, type Deployable, type ServiceName } from "@meter/contracts";
import { repoRoot } from "@meter/local-infra";

/**
 * What each image holds and runs, derived from the one list of services (packages/contracts
 * services.ts). The Dockerfile has one target per deployable; `build.ts` makes the folder it copies.
 */
export interface DeployableImage {
  deployable: Deployable;
  service: ServiceName;
  /** The workspace folder of the service (`services/text`, `gateway`). */
  dir: string;
  /** The process it runs, relative to `dir`: `src/main.ts` (an API) or `src/worker.ts` (a queue worker). */
  entry: "src/main.ts" | "src/worker.ts";
  /** Where it listens: `<PREFIX>_PORT` for an API, `<PREFIX>_WORKER_PORT` for a worker (health and metrics only). */
  portSetting: string;
  /**
   * Its migrations: `deploy` (the API image of a service with a database: its release's migration Job
   * runs `dist/migrate.js deploy` as the owner role) or `wait` (a worker's); every pod of either runs
   * `dist/migrate.js wait` as its runtime role before it starts. None without a database.
   */
  migrations?: "deploy" | "wait";
  /**
   * Files the process reads at run time, copied to the same path relative to the image's /app (the
   * bundle keeps each module's own __dirname, see bundle.ts).
   */
  files: string[];
  /**
   * Workspace packages needed as files, not bundled: the gateway's esbuild bundles the cabinet's pages
   * from source when it starts, and those import @meter/contracts.
   */
  sourcePackages: string[];
  /** Debian packages of the runtime image beyond Node and tini. */
  aptPackages: string[];
}

/**
 * Tesseract with the languages the OCR engine reads and the binding its long-lived workers run on
 * (media-engines tesseract-worker.ts), and the fonts sharp renders text with.
 */
const MEDIA_WORKER_APT = ["tesseract-ocr", "tesseract-ocr-eng", "tesseract-ocr-rus", "python3-tesserocr", "fonts-dejavu-core", "fontconfig-config"];

/** The migrations, and the SQL functions `migrate.js deploy` applies after them where the service has any (packages/db-tools sql-files.ts). */
const databaseFiles = (dir: string): string[] => [
  `${dir}/prisma/migrations`,
  ...(existsSync(path.join(repoRoot(), dir, "prisma", "sql")) ? [`${dir}/prisma/sql`] : []),
];

function describe(deployable: Deployable): DeployableImage {
  const worker = deployable.endsWith("-worker");
  const service = (worker ? deployable.slice(0, -"-worker".length) : deployable) as ServiceName;
  const entry = ServiceCatalog[service];
  const database = entry.database;
  return {
    deployable,
    service,
    dir: entry.dir,
    entry: worker ? "src/worker.ts" : "src/main.ts",
    portSetting: `${envPrefix(service)}_${worker ? "WORKER_PORT" : "PORT"}`,
    ...(database ? { migrations: worker ? ("wait" as const) : ("deploy" as const) } : {}),
    files: [...(database ? databaseFiles(entry.dir) : []), ...(service === "gateway" ? ["web/cabinet/src"] : [])],
    sourcePackages: service === "gateway" ? ["@meter/contracts"] : [],
    aptPackages: deployable === "media-jobs-worker" ? MEDIA_WORKER_APT : [],
  };
}

export const IMAGES: readonly DeployableImage[] = DEPLOYABLES.map(describe);

export function imageOf(deployable: string): DeployableImage {
  const found = IMAGES.find((i) => i.deployable === deployable);
  if (!found) throw new Error(`no deployable ${deployable} (one of ${DEPLOYABLES.join(", ")})`);
  return found;
}

/** The image's name in the registry and in the kustomizations' `images:` (`meter-text`). */
export const imageName = (deployable: Deployable): string => `meter-${deployable}`;
