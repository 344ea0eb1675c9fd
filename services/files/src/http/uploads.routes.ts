import { Router } from "express";
import type { UploadService } from "../services/upload.service";
import { streamedBodyErrors } from "./streamed-body";

/** `PUT /v1/uploads/{token}`: the link is the credential (the gateway passes these on as anonymous). */
export function uploadRoutes(deps: { uploads: UploadService }): Router {
  const r = Router();
  r.put("/:token", async (req, res) => {
    res.json(await deps.uploads.upload(req.params.token, req.headers, req));
  });
  r.use(streamedBodyErrors);
  return r;
}
