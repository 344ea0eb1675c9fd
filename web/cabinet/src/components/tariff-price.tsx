import type { TextTariff, UnitTariff } from "@meter/contracts";
import type { Tariff } from "../lib/operations";
import type { OperationName } from "../lib/tariff-change";
import { useT } from "../i18n/locale";
import { Amount } from "./amount";

/**
 * One operation's price in the catalog's own units: text per 1,000 input and output tokens, media per
 * its unit; every digit of the tariff (formatPrice), the microrubles on hover.
 */
export function TariffPrice({ operation, tariff }: { operation: OperationName; tariff: Tariff }) {
  const t = useT();
  if (operation === "text") {
    const text = tariff as TextTariff;
    return (
      <>
        <Amount price microrub={text.input_microrub_per_1k_tokens} /> {t.models.in} / <Amount price microrub={text.output_microrub_per_1k_tokens} />{" "}
        {t.models.outPer1k}
      </>
    );
  }
  const unit = tariff as UnitTariff;
  return (
    <>
      <Amount price microrub={unit.price_per_unit_microrub} /> {t.models.per(t.models.units[unit.unit] ?? unit.unit)}
    </>
  );
}
