import { useState } from "preact/hooks";
import type { WebhookDelivery } from "@meter/contracts";
import { api } from "../api";
import { useT } from "../i18n/locale";
import { ACTIONS, DataTable } from "./data-table";
import { DateTime } from "./date-time";
import { Done, ErrorNotice } from "./notice";
import { useLoad } from "./use-load";

/**
 * An endpoint's deliveries, newest first, with their attempts' last answer; a failed one can be sent
 * once more (docs/api.md "Webhooks"). `base` is the endpoint's API path (the member's `/webhooks/{id}`
 * or the operator's `/admin/organizations/{org}/webhooks/{id}`).
 */
export function DeliveryLog({ base, url, budgetZone }: { base: string; url: string; budgetZone: string }) {
  const t = useT();
  const log = useLoad(() => api<{ data: WebhookDelivery[] }>("GET", `${base}/deliveries?limit=50`), [base]);
  const [error, setError] = useState<unknown>();
  const [sent, setSent] = useState<string>();
  const c = t.deliveries.columns;
  return (
    <section aria-labelledby="log-heading" data-testid="delivery-log">
      <h3 id="log-heading">{t.deliveries.heading(url)}</h3>
      <ErrorNotice error={log.error ?? error} />
      {sent && <Done>{t.deliveries.sentAgain(sent)}</Done>}
      {log.data && (
        <DataTable
          columns={[c.event, c.status, { label: c.attempts, num: true }, c.answer, c.created, ACTIONS]}
          rows={log.data.data}
          empty={t.deliveries.none}
          row={(d) => (
            <tr key={d.id} data-status={d.status}>
              <th scope="row">
                <span class="tag">{d.event_type}</span> <code class="id">{d.event_id}</code>
              </th>
              <td>
                <span class={`status status-${d.status}`}>{t.deliveries.status[d.status] ?? d.status}</span>
                {d.next_attempt_at && (
                  <>
                    {" "}
                    ({t.deliveries.nextTry} <DateTime iso={d.next_attempt_at} budgetZone={budgetZone} />)
                  </>
                )}
              </td>
              <td class="num">{d.attempts}</td>
              <td class="wrap">
                {d.last_response_status ?? t.deliveries.noAnswer}
                {d.last_error ? `: ${d.last_error}` : ""}
              </td>
              <td>
                <DateTime iso={d.created_at} budgetZone={budgetZone} />
              </td>
              <td>
                {d.status === "failed" && (
                  <button
                    type="button"
                    aria-label={t.deliveries.sendAgainName(d.event_type, d.event_id)}
                    onClick={() =>
                      void api<WebhookDelivery>("POST", `${base}/deliveries/${d.id}/redeliver`).then(() => {
                        setError(undefined);
                        setSent(d.event_id);
                        log.reload();
                      }, setError)
                    }
                  >
                    {t.deliveries.sendAgain}
                  </button>
                )}
              </td>
            </tr>
          )}
        />
      )}
      <button type="button" class="quiet" onClick={() => log.reload()}>
        {t.deliveries.refresh}
      </button>
    </section>
  );
}
