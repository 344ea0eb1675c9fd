import { toMicrorub, type Unit } from "@meter/contracts";
import type { Quantity } from "@meter/media-engines";

/**
 * The quantity a tariff bills, from what an engine measured (or counted when it ran). The engine counts
 * in its own unit (pages, images, characters, requests); a tariff in another unit is billable only where
 * the count is known regardless of the engine: one `request` per job, and one `file` or `document` per
 * input. Anything else cannot be counted: undefined, and the cost is unknown (nothing is reserved).
 */
export function billableQuantity(tariffUnit: Unit, measured: Quantity, inputs: number): number | undefined {
  if (measured.unit === tariffUnit) return measured.quantity;
  if (tariffUnit === "request") return 1;
  if (tariffUnit === "file" || tariffUnit === "document") return inputs;
  return undefined;
}

/**
 * price x quantity, exactly (a price per unit is a whole number of microrubles, so nothing rounds), in
 * BigInt; undefined when the product is beyond what an amount can be, which makes the cost unknown.
 */
export function costOf(pricePerUnit: number, quantity: number): number | undefined {
  const cost = BigInt(pricePerUnit) * BigInt(quantity);
  return cost <= BigInt(Number.MAX_SAFE_INTEGER) ? toMicrorub(cost) : undefined;
}

/** The charge for what ran: its cost, never more than the hold (a run never counts more than was measured). */
export function chargeOf(pricePerUnit: number, quantity: number, hold: number): number {
  const cost = BigInt(pricePerUnit) * BigInt(quantity);
  return toMicrorub(cost < BigInt(hold) ? cost : BigInt(hold));
}
