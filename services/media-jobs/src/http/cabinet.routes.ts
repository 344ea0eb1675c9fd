import { Router } from "express";
import { ListJobsQuery } from "@meter/contracts";
import { AppError, parseInput } from "@meter/service-kit";
import type { MemberJobsService } from "../services/member-jobs.service";
import { renderJobList } from "./job.render";

/** `GET /cabinet/v1/jobs`: the web cabinet's list of the signed-in member's jobs (a session identity, from the gateway). */
export function cabinetRoutes(deps: { memberJobs: MemberJobsService }): Router {
  const r = Router();
  r.get("/cabinet/v1/jobs", async (req, res) => {
    const id = req.identity;
    if (id?.kind !== "session" || id.role !== "member") throw new AppError("insufficient_scope", "jobs belong to members; the operator has none");
    const { jobs, hasMore } = await deps.memberJobs.list(id.user_id, parseInput(ListJobsQuery, req.query));
    res.json(renderJobList(jobs, hasMore));
  });
  return r;
}
