import type { Unit } from "@meter/contracts";
import type { EngineResult } from "./provider";

/** The result file of an analysis or OCR: the document as JSON, billed at `quantity` of `unit`. */
export function jsonResult(unit: Unit, quantity: number, document: unknown, filename: string): EngineResult {
  return { unit, quantity, data: Buffer.from(JSON.stringify(document)), mimeType: "application/json", filename };
}
