import type { Operations } from "@meter/contracts";
import { api } from "../api";
import { DataTable } from "../components/data-table";
import { Layout } from "../components/layout";
import { ErrorNotice } from "../components/notice";
import { TariffPrice } from "../components/tariff-price";
import { useLoad } from "../components/use-load";
import { OPERATION_ENDPOINTS, tariffsOf } from "../lib/operations";
import { useT } from "../i18n/locale";
import { useMember } from "../session";

/** An entry of the published catalog, as `GET /cabinet/api/models` (and a key's `GET /v1/models`) lists it. */
interface PublishedModel {
  id: string;
  display_name: string;
  operations: Operations;
}

/** The models the organization can call, one line per model and operation, with the price a request pays. */
export function ModelsPage() {
  const me = useMember();
  const models = useLoad(() => api<{ data: PublishedModel[] }>("GET", "/models"), [me.organization_id]);
  const rows = (models.data?.data ?? []).flatMap((m) => tariffsOf(m.operations).map(([operation, tariff]) => ({ model: m, operation, tariff })));
  const t = useT();
  const c = t.models.columns;
  return (
    <Layout title={t.nav.models}>
      <p>{t.models.intro}</p>
      <ErrorNotice error={models.error} />
      {models.data && rows.length === 0 && <p>{t.models.none}</p>}
      {rows.length > 0 && (
        <DataTable
          testId="models"
          columns={[c.model, c.kind, c.endpoint, c.price]}
          rows={rows}
          row={({ model, operation, tariff }) => (
            <tr key={`${model.id} ${operation}`} data-model={model.id} data-operation={operation}>
              <th scope="row" class="wrap">
                <code>{model.id}</code>
                {model.display_name !== model.id && <div class="detail">{model.display_name}</div>}
              </th>
              <td>{t.models.kinds[operation] ?? OPERATION_ENDPOINTS[operation].kind}</td>
              <td>
                {OPERATION_ENDPOINTS[operation].endpoints.map((e) => (
                  <div key={e}>
                    <code>{e}</code>
                  </div>
                ))}
              </td>
              <td>
                <TariffPrice operation={operation} tariff={tariff} />
              </td>
            </tr>
          )}
        />
      )}
    </Layout>
  );
}
