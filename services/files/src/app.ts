import type { Express } from "express";
import { createServiceApp, requireIdentity, type Logger, type Metrics, type ReadinessCheck, type InternalAuth } from "@meter/service-kit";
import { cabinetRoutes } from "./http/cabinet.routes";
import { fileRoutes } from "./http/files.routes";
import { internalRoutes } from "./http/internal.routes";
import { uploadRoutes } from "./http/uploads.routes";
import type { CompletionService } from "./services/completion.service";
import type { FileService } from "./services/file.service";
import type { JobResultService } from "./services/job-result.service";
import type { UploadService } from "./services/upload.service";

/** The use-cases the routes call; composition.ts builds them. */
export interface FilesServices {
  files: FileService;
  uploads: UploadService;
  completion: CompletionService;
  results: JobResultService;
}

export interface AppDeps {
  auth: InternalAuth;
  logger: Logger;
  metrics: Metrics;
  services: FilesServices;
  /** The origin of upload links (publicBaseUrlOf): from the settings, never from a request. */
  publicBaseUrl: string;
  readiness: ReadinessCheck[];
}

/**
 * Three doors, each for one kind of caller: key holders (through the gateway), upload links (the
 * gateway passes them on as anonymous; the link is the credential), and sibling services.
 */
export function createApp(deps: AppDeps): Express {
  const { services } = deps;
  return createServiceApp({ logger: deps.logger, metrics: deps.metrics, readiness: deps.readiness }, (app) => {
    // Streamed bodies (job results, uploads) are not in the signature; their own checks guard them.
    app.use("/internal/v1", requireIdentity(deps.auth, { kinds: ["service"], from: ["media-jobs", "media-jobs-worker"], streamedBody: true }));
    app.use(internalRoutes(services));
    app.use("/v1/uploads", requireIdentity(deps.auth, { kinds: ["anonymous"], from: ["gateway"], streamedBody: true }), uploadRoutes(services));
    app.use(
      "/v1/files",
      requireIdentity(deps.auth, { kinds: ["key"], from: ["gateway"] }),
      fileRoutes({ files: services.files, completion: services.completion, publicBaseUrl: deps.publicBaseUrl }),
    );
    // The web cabinet: a signed-in member's own files: list, download, delete.
    app.use("/cabinet/v1/files", requireIdentity(deps.auth, { kinds: ["session"], from: ["gateway"] }), cabinetRoutes({ files: services.files }));
  });
}
