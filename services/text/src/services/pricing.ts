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
  const numerator =
    BigInt(inputTokens) * BigInt(tariff.input_microrub_per_1k_tokens) + BigInt(outputTokens) * BigInt(tariff.output_microrub_per_1k_tokens);
  return toMicrorub(ceilDiv(numerator, 1000n));
}
