import { Router, type Request } from "express";
import { z } from "zod";
import { AppError, parseInput } from "@meter/service-kit";
import type { FileService } from "../services/file.service";
import { fileIdParam } from "./params";
import { sendContent } from "./send-content";

const ListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().min(1).max(512).optional(),
});

/**
 * `/cabinet/v1/files`: the web cabinet's view of the signed-in member's files (a session identity, from
 * the gateway): list, download, delete. Files are the user's, whichever organization is chosen.
 */
export function cabinetRoutes(deps: { files: FileService }): Router {
  const r = Router();
  r.get("/", async (req, res) => {
    res.json(await deps.files.list(memberOf(req), parseInput(ListQuery, req.query)));
  });
  r.get("/:id/content", async (req, res) => {
    await sendContent(req, res, await deps.files.openContent(memberOf(req), fileIdParam(req.params.id)));
  });
  r.delete("/:id", async (req, res) => {
    res.json(await deps.files.delete(memberOf(req), fileIdParam(req.params.id)));
  });
  return r;
}

/** The member's user id; the operator has no files. */
function memberOf(req: Request): string {
  const id = req.identity;
  if (id?.kind !== "session" || id.role !== "member") throw new AppError("insufficient_scope", "files belong to members; the operator has none");
  return id.user_id;
}
