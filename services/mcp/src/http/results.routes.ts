import { Router } from "express";
import { keyIdentityOf } from "@meter/service-kit";
import type { ResultStore } from "../domain/stored-result";
import { McpErrors } from "../errors";

/**
 * `GET /v1/mcp/results/{id}`: a tool result that was too large for one response, as the JSON it was,
 * for the key that called the tool (anyone else's id is 404, as an unknown one).
 */
export function resultsRoutes(deps: { results: ResultStore }): Router {
  const r = Router();
  r.get("/v1/mcp/results/:id", async (req, res) => {
    const content = await deps.results.find(String(req.params.id), keyIdentityOf(req).key_id);
    if (content === undefined) throw McpErrors.resultNotFound();
    res.status(200).type("application/json").send(content);
  });
  return r;
}
