import type { ChatUsage } from "./chat-provider";

/** A token count an upstream reported, or undefined when it is not a non-negative integer. */
export function tokenCount(v: unknown): number | undefined {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : undefined;
}

/**
 * Usage as charged: both counts must be usable, else none is (the caller then estimates conservatively
 * rather than charging half of a nonsensical report).
 */
export function usageOf(input: unknown, output: unknown): ChatUsage | undefined {
  const input_tokens = tokenCount(input);
  const output_tokens = tokenCount(output);
  return input_tokens === undefined || output_tokens === undefined ? undefined : { input_tokens, output_tokens };
}
