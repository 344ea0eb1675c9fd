import type { TextTariff, UnitTariff } from "@meter/contracts";
import type { Tariff } from "../lib/operations";
import type { OperationName } from "../lib/tariff-change";
import { Amount } from "./amount";

/**
 * One operation's price in the catalog's own units: text per 1,000 input and output tokens, media per
 * its unit; every digit of the tariff (formatPrice), the microrubles on hover.
 */
export function TariffPrice({ operation, tariff }: { operation: OperationName; tariff: Tariff }) {
  if (operation === "text") {
    const t = tariff as TextTariff;
    return (
      <>
        <Amount price microrub={t.input_microrub_per_1k_tokens} /> in / <Amount price microrub={t.output_microrub_per_1k_tokens} /> out per 1k tokens
      </>
    );
  }
  const t = tariff as UnitTariff;
  return (
    <>
      <Amount price microrub={t.price_per_unit_microrub} /> per {t.unit}
    </>
  );
}
