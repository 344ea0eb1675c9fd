import type { Request } from "express";
import { ModelId } from "@meter/contracts";
import { parseInput } from "@meter/service-kit";

/** A model id may contain `/` (`vendor/model`, as OpenRouter names them): the rest of the path is the id. */
export function modelIdOf(req: Request): string {
  const segments = (req.params as { model_id?: string[] }).model_id ?? [];
  return parseInput(ModelId, segments.join("/"));
}
