import { HoldSource } from "@meter/contracts";
import type { HoldOwners } from "../holds/hold-owners.adapter";
import type { AllowanceRecall } from "./api-key.service";

/**
 * Calls a key's open allowances back through their holders' `POST /internal/v1/allowances/unknown`: the
 * holder closes them wherever its processes hold them, so no request is placed on them from its answer
 * on, and returns each with the estimates its requests used (docs/api.md, "Allowances").
 */
export function allowanceRecallVia(owners: Pick<HoldOwners, "unknownAllowances">): AllowanceRecall {
  return async (allowances) => {
    const bySource = new Map<HoldSource, string[]>();
    for (const a of allowances) {
      const source = HoldSource.parse(a.source);
      bySource.set(source, [...(bySource.get(source) ?? []), a.id]);
    }
    await Promise.all([...bySource].map(([source, ids]) => owners.unknownAllowances(source, ids)));
  };
}
