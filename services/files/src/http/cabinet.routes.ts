import { Router } from "express";
import { z } from "zod";
import { AppError, parseInput } from "@meter/service-kit";
import type { FileService } from "../services/file.service";

const ListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().min(1).max(512).optional(),
});

/** `GET /cabinet/v1/files`: the web cabinet's list of the signed-in member's files (a session identity, from the gateway). */
export function cabinetRoutes(deps: { files: FileService }): Router {
  const r = Router();
  r.get("/", async (req, res) => {
    const id = req.identity;
    if (id?.kind !== "session" || id.role !== "member") throw new AppError("insufficient_scope", "files belong to members; the operator has none");
    res.json(await deps.files.list(id.user_id, parseInput(ListQuery, req.query)));
  });
  return r;
}
