import { z } from "zod";

/** An amount in microrubles: always a non-negative safe integer, never a float or a string. */
export const Microrub = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
export type Microrub = z.infer<typeof Microrub>;

/** A balance that may be owed: negative only after a recovered charge (docs/api.md, "Money rules"). */
export const SignedMicrorub = z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);

/** A positive amount (credits, holds). */
export const PositiveMicrorub = Microrub.min(1);

/** price * quantity rounded up to a whole microrub; the contract says rounding is always up. */
export function ceilDiv(numerator: bigint, denominator: bigint): bigint {
  if (denominator <= 0n) throw new RangeError("denominator must be positive");
  if (numerator <= 0n) return 0n;
  return (numerator + denominator - 1n) / denominator;
}

/** A PostgreSQL bigint arrives as bigint or string; the edge turns it into a JSON number. */
export function toMicrorub(value: bigint | number | string): number {
  const n = typeof value === "bigint" ? value : BigInt(value);
  if (n > BigInt(Number.MAX_SAFE_INTEGER) || n < -BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new RangeError(`amount ${n} exceeds the safe integer range`);
  }
  return Number(n);
}
