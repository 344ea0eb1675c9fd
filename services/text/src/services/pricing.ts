import { ceilDiv, toMicrorub, type TextTariff } from "@meter/contracts";

/**
 * A conservative count of the tokens a text can take: its UTF-8 bytes. Byte-level BPE tokenizers
 * (every upstream we speak to) never produce more tokens than bytes, so a hold computed from this
 * covers the input whatever the model, for Latin and Cyrillic text alike; settlement then charges
 * what the upstream reports. Each message adds a few tokens of framing.
 */
export function estimateInputTokens(system: string | undefined, messages: readonly { text: string }[]): number {
  const FRAMING_PER_MESSAGE = 4;
  const FRAMING_BASE = 8;
  let tokens = FRAMING_BASE;
  if (system) tokens += Buffer.byteLength(system, "utf8") + FRAMING_PER_MESSAGE;
  for (const m of messages) tokens += Buffer.byteLength(m.text, "utf8") + FRAMING_PER_MESSAGE;
  return tokens;
}

/** What tokens cost at a tariff: prices are per 1000 tokens; one rounding, always up. */
export function costOf(tariff: TextTariff, inputTokens: number, outputTokens: number): number {
  return toMicrorub(exactCost(tariff, inputTokens, outputTokens));
}

/**
 * The charge for reported usage: its cost, never more than the hold. Worked out in BigInt and capped
 * before it becomes a number, so an absurd report (10^300 tokens) costs the hold, never an exception.
 */
export function chargeOf(tariff: TextTariff, inputTokens: number, outputTokens: number, hold: number): number {
  const cost = exactCost(tariff, inputTokens, outputTokens);
  return toMicrorub(cost < BigInt(hold) ? cost : BigInt(hold));
}

function exactCost(tariff: TextTariff, inputTokens: number, outputTokens: number): bigint {
  const numerator = tokens(inputTokens) * BigInt(tariff.input_microrub_per_1k_tokens) + tokens(outputTokens) * BigInt(tariff.output_microrub_per_1k_tokens);
  return ceilDiv(numerator, 1000n);
}

/** A token count as BigInt; a count that is not a non-negative integer is none (the caller estimates). */
function tokens(n: number): bigint {
  if (!Number.isFinite(n) || n < 0) return 0n;
  return BigInt(Math.trunc(n));
}
