import { Router, type Request, type Response } from "express";
import {
  FilesJobRequest,
  IdempotencyKeyHeader,
  IdempotentReplayedHeader,
  ImageEditJobRequest,
  ListJobsQuery,
  TextAnalysisJobRequest,
  type MediaOperation,
  type Scope,
} from "@meter/contracts";
import { keyIdentityOf, parseInput, requireScope } from "@meter/service-kit";
import type { JobEndpoint } from "../domain/job-record";
import type { JobCancelService } from "../services/job-cancel.service";
import type { PlanInput } from "../services/job-planner";
import type { JobQueryService } from "../services/job-query.service";
import type { JobOutcome, JobRequestService } from "../services/job-request.service";
import { isFinal, renderJob, renderJobList } from "./job.render";

export interface JobsRoutesDeps {
  requests: JobRequestService;
  queries: JobQueryService;
  cancels: JobCancelService;
}

/** Thin handlers: parse, hand to the use-case, render its outcome. */
export function jobsRoutes(deps: JobsRoutesDeps): Router {
  const r = Router();

  /** A job endpoint: its right, its idempotency scope, and how its body becomes a plan. */
  const create = (scope: Scope, endpoint: JobEndpoint, operation: MediaOperation, toPlan: (body: unknown) => PlanInput) =>
    async function (req: Request, res: Response) {
      const identity = keyIdentityOf(req);
      requireScope(identity, scope);
      const plan = { ...toPlan(req.body), operation };
      send(
        res,
        await deps.requests.create({
          identity,
          requestId: req.requestId,
          endpoint,
          idempotencyKey: req.header(IdempotencyKeyHeader),
          body: req.body,
          plan,
        }),
      );
    };

  const filesPlan =
    (operation: MediaOperation) =>
    (raw: unknown): PlanInput => {
      const body = parseInput(FilesJobRequest, raw);
      return {
        operation,
        model: body.model,
        settings: body.settings,
        fileIds: body.file_ids ?? (body.file_id !== undefined ? [body.file_id] : undefined),
        maxCost: body.max_cost_microrub,
      };
    };

  r.post(
    "/v1/images/edits",
    create("images", "images/edits", "image_edit", (raw) => {
      const body = parseInput(ImageEditJobRequest, raw);
      return {
        operation: "image_edit",
        model: body.model,
        settings: body.settings,
        prompt: body.prompt,
        fileIds: [body.file_id],
        maxCost: body.max_cost_microrub,
      };
    }),
  );
  r.post("/v1/images/analysis", create("images", "images/analysis", "image_analysis", filesPlan("image_analysis")));
  r.post("/v1/ocr", create("text", "ocr", "ocr", filesPlan("ocr")));
  r.post(
    "/v1/text/analysis",
    create("text", "text/analysis", "text_analysis", (raw) => {
      const body = parseInput(TextAnalysisJobRequest, raw);
      return { operation: "text_analysis", model: body.model, settings: body.settings, input: body.input, maxCost: body.max_cost_microrub };
    }),
  );

  r.get("/v1/jobs", async (req, res) => {
    const { jobs, hasMore } = await deps.queries.list(keyIdentityOf(req), parseInput(ListJobsQuery, req.query));
    res.json(renderJobList(jobs, hasMore));
  });

  r.get("/v1/jobs/:id", async (req, res) => {
    const job = await deps.queries.get(keyIdentityOf(req), req.params.id);
    res.json(renderJob(job));
  });

  r.post("/v1/jobs/:id/cancel", async (req, res) => {
    const job = await deps.cancels.cancel(keyIdentityOf(req), req.params.id);
    res.json(renderJob(job));
  });

  return r;
}

/** 202 while the job is on its way (with where to poll), 200 once it is final; a repeat says so. */
function send(res: Response, outcome: JobOutcome): void {
  const final = isFinal(outcome.job);
  res.status(final ? 200 : 202);
  res.setHeader("location", `/v1/jobs/${outcome.job.id}`);
  if (!final) res.setHeader("retry-after", "1");
  if (outcome.replayed) res.setHeader(IdempotentReplayedHeader, "true");
  res.json(renderJob(outcome.job));
}
