export interface SizingSettings {
  /** Seconds of the key's recent spend an allowance is sized for (ALLOWANCE_SECONDS). */
  seconds: number;
  /** The fewest requests of this estimate an allowance must hold to be worth granting (ALLOWANCE_MIN_REQUESTS). */
  minRequests: number;
}

/**
 * What to ask billing for: enough for `seconds` of the key's recent spend and never less than
 * `minRequests` requests of this estimate; the minimum is those requests, so a quiet key near its limit
 * is refused and stays on per-request holds, where the last microrubles are spent exactly.
 */
export function allowanceSize(estimate: number, ratePerSecond: number, s: SizingSettings): { wanted: number; min: number; unit: number } {
  const min = s.minRequests * estimate;
  // Billing grants whole units of the estimate: no remainder too small for this request stays parked.
  return { wanted: Math.max(min, Math.ceil(ratePerSecond * s.seconds)), min, unit: estimate };
}
