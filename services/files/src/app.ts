import type { Express } from "express";
import { createServiceApp, requireIdentity, type Logger, type Metrics, type ReadinessCheck } from "@meter/service-kit";
import type { ObjectStore } from "./adapters/object-store";
import type { Db } from "./db";
import { fileRoutes } from "./http/files.routes";
import { internalRoutes } from "./http/internal.routes";
import { uploadRoutes } from "./http/uploads.routes";
import type { Clock, FilesPolicy } from "./policy";
import { FileRepository } from "./repositories/file.repository";
import { CompletionService } from "./services/completion.service";
import { FileService } from "./services/file.service";
import { JobResultService } from "./services/job-result.service";
import { UploadService } from "./services/upload.service";
import type { UploadLinkService } from "./services/upload-link.service";

export interface FilesServices {
  files: FileService;
  uploads: UploadService;
  completion: CompletionService;
  results: JobResultService;
}

export interface FilesServicesDeps {
  db: Db;
  store: ObjectStore;
  links: UploadLinkService;
  policy: FilesPolicy;
  clock: Clock;
  logger: Logger;
  /** Wakes the outbox relay after a verification message was committed. */
  kickOutbox: () => void;
}

export function createFilesServices(deps: FilesServicesDeps): FilesServices {
  const files = new FileRepository(deps.db);
  const shared = { files, store: deps.store, clock: deps.clock, logger: deps.logger };
  return {
    files: new FileService({ ...shared, links: deps.links, policy: deps.policy }),
    uploads: new UploadService({ ...shared, links: deps.links }),
    completion: new CompletionService({ files, policy: deps.policy, clock: deps.clock, kickOutbox: deps.kickOutbox }),
    results: new JobResultService({ ...shared, policy: deps.policy }),
  };
}

export interface AppDeps {
  internalSecret: string;
  logger: Logger;
  metrics: Metrics;
  services: FilesServices;
  /** PUBLIC_BASE_URL; unset, upload links are built from the forwarded host of each request. */
  publicBaseUrl: string | undefined;
  readiness: ReadinessCheck[];
}

/**
 * Three doors, each for one kind of caller: key holders (through the gateway), upload links (the
 * gateway passes them on as anonymous; the link is the credential), and sibling services.
 */
export function createApp(deps: AppDeps): Express {
  const { services } = deps;
  return createServiceApp({ logger: deps.logger, metrics: deps.metrics, readiness: deps.readiness }, (app) => {
    app.use("/internal/v1", requireIdentity(deps.internalSecret, ["service"]), internalRoutes(services));
    app.use("/v1/uploads", requireIdentity(deps.internalSecret, ["anonymous"]), uploadRoutes(services));
    app.use(
      "/v1/files",
      requireIdentity(deps.internalSecret, ["key"]),
      fileRoutes({ files: services.files, completion: services.completion, publicBaseUrl: deps.publicBaseUrl }),
    );
  });
}
