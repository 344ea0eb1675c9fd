import type { z } from "zod";
import { McpToolSchemas, type McpToolName } from "@meter/contracts";
import type { Caller, ToolOutcome } from "../../domain/tool-call";

/** MCP's tool annotations: hints for a client deciding what to confirm with its user. */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** A tool as both protocol eras list and call it. */
export interface Tool {
  name: McpToolName;
  title: string;
  description: string;
  annotations: ToolAnnotations;
  input: z.ZodObject;
  output: z.ZodObject;
  /** `args` have been parsed with `input` (ToolInvoker does it, so refusals are uniform). */
  run(args: Record<string, unknown>, caller: Caller): Promise<ToolOutcome>;
}

type InputOf<N extends McpToolName> = z.infer<(typeof McpToolSchemas)[N]["input"]>;

/** A tool with the contract's schemas for its name, its `run` typed by its own input schema. */
export function defineTool<N extends McpToolName>(
  def: Omit<Tool, "name" | "input" | "output" | "run"> & { name: N; run(args: InputOf<N>, caller: Caller): Promise<ToolOutcome> },
): Tool {
  const schemas = McpToolSchemas[def.name];
  return { ...def, input: schemas.input, output: schemas.output, run: (args, caller) => def.run(args as InputOf<N>, caller) };
}

export const READ_ONLY: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
/** Paid: a repeat is free only with the same idempotency key, and a call without one gets a new key. */
export const PAID: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true };

/** Fields of `args` that are set, without the tool's own `idempotency_key` (it travels as a header). */
export function apiBody(args: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(args).filter(([k, v]) => v !== undefined && k !== "idempotency_key"));
}
