import type { Operations, TextTariff, UnitTariff } from "@meter/contracts";
import type { OperationName } from "./tariff-change";

export type Tariff = TextTariff | UnitTariff;

/**
 * Where each operation is called, as docs/api.md lists them (the pages import only the contracts'
 * types, so the bundle stays free of zod). `image_generation` has a tariff but no endpoint: it is quoted only.
 */
export const OPERATION_ENDPOINTS: Record<OperationName, { kind: string; endpoints: string[] }> = {
  text: { kind: "text", endpoints: ["POST /v1/messages", "POST /v1/responses"] },
  image_generation: { kind: "image generation", endpoints: ["POST /v1/quotes (a quote only)"] },
  image_edit: { kind: "image edit", endpoints: ["POST /v1/images/edits"] },
  image_analysis: { kind: "image analysis", endpoints: ["POST /v1/images/analysis"] },
  ocr: { kind: "OCR", endpoints: ["POST /v1/ocr"] },
  text_analysis: { kind: "text analysis", endpoints: ["POST /v1/text/analysis"] },
};

/** A model's tariffs, one per operation it is priced for, in the catalog's order. */
export function tariffsOf(operations: Operations): [OperationName, Tariff][] {
  return (Object.entries(operations) as [OperationName, Tariff | undefined][]).filter((e): e is [OperationName, Tariff] => e[1] !== undefined);
}
