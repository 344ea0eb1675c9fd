import type { ModelActivity, Operations, TextTariff, UnitTariff } from "@meter/contracts";

export type OperationName = keyof Operations;

/** One price of one operation, before and after an edit (microrubles): text's input or output per 1k tokens, or the price per `unit`. */
export interface PriceChange {
  operation: OperationName;
  price: "input" | "output" | "unit";
  /** The unit a media price is per. */
  unit?: string;
  before: number | undefined;
  after: number | undefined;
}

export interface OperationEffect {
  operation: OperationName;
  /** What a typical request costs: 1,000 input and 1,000 output tokens for text (no unit), one `sampleUnit` otherwise. */
  sampleUnit: string | undefined;
  sampleBefore: number | undefined;
  sampleAfter: number | undefined;
  /** The last days' charges of this model and operation, and the holds still placed at the old price. */
  activity: ModelActivity | undefined;
  /** The same traffic at the new prices: a range when input and output prices change differently. */
  projected: { low: number; high: number } | undefined;
}

export interface ChangeEffect {
  availability: "enabled" | "disabled" | "unchanged";
  prices: PriceChange[];
  operations: OperationEffect[];
}

function prices(op: OperationName, t: TextTariff | UnitTariff | undefined): Partial<Record<PriceChange["price"], number>> {
  if (!t) return {};
  if (op === "text") {
    const text = t as TextTariff;
    return { input: text.input_microrub_per_1k_tokens, output: text.output_microrub_per_1k_tokens };
  }
  return { unit: (t as UnitTariff).price_per_unit_microrub };
}

function sample(op: OperationName, t: TextTariff | UnitTariff | undefined): number | undefined {
  if (!t) return undefined;
  if (op === "text") return (t as TextTariff).input_microrub_per_1k_tokens + (t as TextTariff).output_microrub_per_1k_tokens;
  return (t as UnitTariff).price_per_unit_microrub;
}

/** settled * after / before, rounded up like every charge, in BigInt so no product loses a microruble. */
function scale(settled: number, after: number, before: number): number {
  const n = BigInt(settled) * BigInt(after);
  const d = BigInt(before);
  return Number((n + d - 1n) / d);
}

/** What saving `after` over `before` would change: availability, each price, sample costs, recent traffic repriced. */
export function changeEffect(
  before: { enabled: boolean; operations: Operations },
  after: { enabled: boolean; operations: Operations },
  activity: ModelActivity[],
): ChangeEffect {
  const names = [...new Set([...Object.keys(before.operations), ...Object.keys(after.operations)])] as OperationName[];
  const priceChanges: PriceChange[] = [];
  const operations: OperationEffect[] = [];
  for (const op of names) {
    const b = before.operations[op];
    const a = after.operations[op];
    const pb = prices(op, b);
    const pa = prices(op, a);
    const unitBefore = op === "text" ? undefined : (b as UnitTariff | undefined)?.unit;
    const unitAfter = op === "text" ? undefined : (a as UnitTariff | undefined)?.unit;
    for (const price of [...new Set([...Object.keys(pb), ...Object.keys(pa)])] as PriceChange["price"][]) {
      // A price per another unit is another price: the old one goes and the new one comes, each with its unit.
      if (unitBefore !== undefined && unitAfter !== undefined && unitBefore !== unitAfter) {
        priceChanges.push({ operation: op, price, unit: unitBefore, before: pb[price], after: undefined });
        priceChanges.push({ operation: op, price, unit: unitAfter, before: undefined, after: pa[price] });
        continue;
      }
      const unit = unitAfter ?? unitBefore;
      priceChanges.push({ operation: op, price, ...(unit !== undefined ? { unit } : {}), before: pb[price], after: pa[price] });
    }
    const act = activity.find((x) => x.operation === op);
    let projected: OperationEffect["projected"];
    // Recent traffic cannot be repriced in another unit: it was counted in the old one.
    if (act && b && a && unitBefore === unitAfter) {
      const ratios = (Object.keys(pb) as PriceChange["price"][])
        .filter((k) => pa[k] !== undefined && pb[k]! > 0)
        .map((k) => ({ after: pa[k]!, before: pb[k]! }));
      if (ratios.length > 0) {
        const values = ratios.map((r) => scale(act.settled_microrub, r.after, r.before));
        projected = { low: Math.min(...values), high: Math.max(...values) };
      }
    }
    operations.push({
      operation: op,
      sampleUnit: unitAfter ?? unitBefore,
      sampleBefore: sample(op, b),
      sampleAfter: sample(op, a),
      activity: act,
      projected,
    });
  }
  return {
    availability: before.enabled === after.enabled ? "unchanged" : after.enabled ? "enabled" : "disabled",
    prices: priceChanges,
    operations,
  };
}
