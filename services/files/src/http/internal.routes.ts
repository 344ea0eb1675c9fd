import { Router } from "express";
import { FilesEndpoints, InternalFileQuery, JobId, StoreJobResultQuery } from "@meter/contracts";
import { AppError, parseInput } from "@meter/service-kit";
import type { FileService } from "../services/file.service";
import type { JobResultService } from "../services/job-result.service";
import { fileIdParam } from "./params";
import { sendContent } from "./send-content";
import { streamedBodyErrors } from "./streamed-body";

/**
 * What media-jobs calls (signed service identity only): check that an input file is the user's and
 * verified, read its bytes, and store a job's result (streamed; idempotent per job).
 */
export function internalRoutes(deps: { files: FileService; results: JobResultService }): Router {
  const r = Router();

  r.get(FilesEndpoints.verifiedFile.path, async (req, res) => {
    const { user_id } = parseInput(InternalFileQuery, req.query);
    res.json(await deps.files.getVerified(user_id, fileIdParam(req.params.id)));
  });

  r.get(FilesEndpoints.content.path, async (req, res) => {
    const { user_id } = parseInput(InternalFileQuery, req.query);
    await sendContent(req, res, await deps.files.openContent(user_id, fileIdParam(req.params.id)));
  });

  r.put(FilesEndpoints.storeJobResult.path, async (req, res) => {
    const jobId = parseInput(JobId, req.params.jobId);
    const q = parseInput(StoreJobResultQuery, req.query);
    const length = req.headers["content-length"];
    if (req.headers["content-type"] === undefined) throw new AppError("unsupported_media_type", "a job result needs a Content-Type");
    const { file, created } = await deps.results.store({
      jobId,
      owner: { userId: q.user_id, organizationId: q.organization_id },
      filename: q.filename,
      readScope: q.read_scope ?? null,
      contentType: req.headers["content-type"],
      sizeBytes: length === undefined || !/^\d+$/.test(length) ? Number.NaN : Number(length),
      body: req,
    });
    res.status(created ? 201 : 200).json(file);
  });

  r.use(streamedBodyErrors);
  return r;
}
