import { Router } from "express";
import { z } from "zod";
import { CreateFileRequest } from "@meter/contracts";
import { jsonBody, keyIdentityOf, parseInput } from "@meter/service-kit";
import type { CompletionService } from "../services/completion.service";
import type { FileService } from "../services/file.service";
import { fileIdParam } from "./params";
import { sendContent } from "./send-content";

const ListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().min(1).max(512).optional(),
});

/** The completion call takes no parameters; an empty body or `{}`. */
const CompleteRequest = z.strictObject({});

/** The public file API (`/v1/files`), for key holders; the gateway has checked the key's scopes. */
export function fileRoutes(deps: { files: FileService; completion: CompletionService; publicBaseUrl: string }): Router {
  const r = Router();
  const body = jsonBody({ limit: "64kb" });

  r.post("/", ...body, async (req, res) => {
    const caller = keyIdentityOf(req);
    const input = parseInput(CreateFileRequest, req.body);
    const owner = { userId: caller.user_id, organizationId: caller.organization_id };
    res.status(201).json(await deps.files.create(owner, input, deps.publicBaseUrl));
  });

  r.get("/", async (req, res) => {
    const q = parseInput(ListQuery, req.query);
    res.json(await deps.files.list(keyIdentityOf(req).user_id, q));
  });

  r.get("/:id", async (req, res) => {
    res.json(await deps.files.get(keyIdentityOf(req).user_id, fileIdParam(req.params.id)));
  });

  r.get("/:id/content", async (req, res) => {
    const key = keyIdentityOf(req);
    await sendContent(req, res, await deps.files.openContentForKey(key.user_id, key.scopes, fileIdParam(req.params.id)));
  });

  r.post("/:id/complete", ...body, async (req, res) => {
    parseInput(CompleteRequest, req.body);
    const { final, file } = await deps.completion.complete(keyIdentityOf(req).user_id, fileIdParam(req.params.id));
    if (!final) res.setHeader("retry-after", "2");
    res.status(final ? 200 : 202).json(file);
  });

  r.delete("/:id", async (req, res) => {
    res.json(await deps.files.delete(keyIdentityOf(req).user_id, fileIdParam(req.params.id)));
  });

  return r;
}
