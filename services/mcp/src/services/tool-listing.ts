import { z } from "zod";
import type { Tool } from "./tools/tool";

/**
 * A tool as tools/list shows it, the same in both eras but for the JSON Schema dialect: draft-07 for the
 * handshake era (what its clients were written against), 2020-12 for 2026-07-28 (that revision's default).
 */
export function toolListing(tool: Tool, dialect: "draft-7" | "draft-2020-12"): Record<string, unknown> {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: z.toJSONSchema(tool.input, { io: "input", target: dialect }),
    outputSchema: z.toJSONSchema(tool.output, { io: "output", target: dialect }),
    annotations: tool.annotations,
  };
}
