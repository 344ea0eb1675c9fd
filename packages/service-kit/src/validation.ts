import type { z } from "zod";
import { AppError } from "./app-error";
import type { ErrorCode } from "@meter/contracts";

/**
 * Parses input with a zod schema and turns the first problem into the contract's error: an unknown key
 * is `unknown_field`, a custom issue may name its own code in `params.code` (e.g. `unsupported_parameter`
 * for `stream: true`), anything else is `invalid_request`. The message names the offending path.
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw appErrorFromZod(result.error);
}

export function appErrorFromZod(error: z.ZodError): AppError {
  const unknown = error.issues.find((i) => i.code === "unrecognized_keys");
  if (unknown && unknown.code === "unrecognized_keys") {
    const where = unknown.path.length ? `${formatPath(unknown.path)}.` : "";
    const fields = unknown.keys.map((k) => `"${where}${k}"`).join(", ");
    return new AppError("unknown_field", `unknown field ${fields}`, { details: { fields: unknown.keys } });
  }
  const first = error.issues[0];
  if (!first) return new AppError("invalid_request", "invalid request");
  const custom = first.code === "custom" ? (first.params as { code?: ErrorCode } | undefined)?.code : undefined;
  const path = first.path.length ? `${formatPath(first.path)}: ` : "";
  return new AppError(custom ?? "invalid_request", `${path}${first.message}`);
}

function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((p) => (typeof p === "number" ? `[${p}]` : String(p)))
    .join(".")
    .replace(/\.\[/g, "[");
}

/**
 * Whether `s` is a uuid in its textual form, so a lookup by it cannot fail on a uuid column's type: an id
 * from a path or from someone else's record that is not one simply matches nothing.
 */
export function isUuid(s: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);
}
