import type { Operations } from "@meter/contracts";
import { api } from "../api";
import { Layout } from "../components/layout";
import { ErrorNotice } from "../components/notice";
import { TariffPrice } from "../components/tariff-price";
import { useLoad } from "../components/use-load";
import { OPERATION_ENDPOINTS, tariffsOf } from "../lib/operations";
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
  return (
    <Layout title="Models and prices">
      <p>
        Every model your keys can call, with its price: text per 1,000 input and output tokens, media per unit. A request is held and charged at the price of
        the moment it is accepted; a price change applies to requests after it.
      </p>
      <ErrorNotice error={models.error} />
      {models.data && rows.length === 0 && <p>No models are available yet.</p>}
      {rows.length > 0 && (
        <div class="table-scroll">
          <table data-testid="models">
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Kind</th>
                <th scope="col">Endpoint</th>
                <th scope="col">Price</th>
              </tr>
            </thead>
            <tbody>
              {rows.map(({ model, operation, tariff }) => (
                <tr key={`${model.id} ${operation}`} data-model={model.id} data-operation={operation}>
                  <th scope="row" class="wrap">
                    <code>{model.id}</code>
                    {model.display_name !== model.id && <div class="detail">{model.display_name}</div>}
                  </th>
                  <td>{OPERATION_ENDPOINTS[operation].kind}</td>
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
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Layout>
  );
}
