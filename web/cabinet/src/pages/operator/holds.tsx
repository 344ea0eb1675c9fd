import { useState } from "preact/hooks";
import type { Hold } from "@meter/contracts";
import { api, query } from "../../api";
import { Amount } from "../../components/amount";
import { DateTime } from "../../components/date-time";
import { DataTable } from "../../components/data-table";
import { Layout } from "../../components/layout";
import { Done, ErrorNotice } from "../../components/notice";
import { useLoad } from "../../components/use-load";
import { useSession } from "../../session";
import { useT } from "../../i18n/locale";

/**
 * Holds active for longer than a few minutes, oldest first: billing's audit asks their owners about
 * them on its own; the operator can free one by hand, giving the reason the ledger will keep.
 */
export function HoldsPage() {
  const { me } = useSession();
  const t = useT();
  const h8 = t.holds;
  const [minutes, setMinutes] = useState("5");
  const olderThan = Math.max(0, Math.floor(Number(minutes) || 0)) * 60;
  const holds = useLoad(() => api<{ data: Hold[] }>("GET", `/admin/holds${query({ status: "active", older_than_s: olderThan, limit: 200 })}`), [olderThan]);
  const [done, setDone] = useState<string>();
  return (
    <Layout title={t.nav.holds}>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          {h8.olderThan}
          <input type="number" min={0} value={minutes} onInput={(e) => setMinutes(e.currentTarget.value)} />
        </label>
        <button type="button" onClick={holds.reload}>
          {t.common.refresh}
        </button>
      </form>
      <ErrorNotice error={holds.error} />
      {done && <Done>{done}</Done>}
      {holds.data && (
        <DataTable
          testId="holds"
          columns={[h8.placed, { label: h8.reserved, num: true }, h8.owner, t.spend.modelOperation, h8.orgKey, h8.release]}
          rows={holds.data.data}
          empty={h8.none}
          row={(h) => (
            <tr key={h.hold_id}>
              <td>
                <DateTime iso={h.created_at} budgetZone={me.budget_timezone} />
              </td>
              <td class="num">
                <Amount microrub={h.amount_microrub} />
              </td>
              <td>
                {h.source ?? "?"}{" "}
                {h.source === "text" && h.owner_ref ? (
                  <a href={`/cabinet/operator/providers?request=${h.owner_ref}`} title={h8.provider}>
                    <code class="id">{h.owner_ref}</code>
                  </a>
                ) : (
                  <code class="id">{h.owner_ref ?? ""}</code>
                )}
              </td>
              <td>
                {h.model ?? ""} · {h.operation ?? ""}
              </td>
              <td>
                <code class="id">{h.organization_id ?? ""}</code> <code class="id">{h.key_id ?? ""}</code>
              </td>
              <td>
                <ReleaseForm
                  hold={h}
                  onReleased={() => {
                    setDone(h8.released(h.hold_id));
                    holds.reload();
                  }}
                />
              </td>
            </tr>
          )}
        />
      )}
    </Layout>
  );
}

function ReleaseForm({ hold, onReleased }: { hold: Hold; onReleased: () => void }) {
  const t = useT();
  const [reason, setReason] = useState("");
  const [error, setError] = useState<unknown>();
  const id = `reason-${hold.hold_id}`;
  return (
    <form
      class="inline"
      onSubmit={(e) => {
        e.preventDefault();
        api("POST", `/admin/holds/${hold.hold_id}/release`, { reason }).then(onReleased, setError);
      }}
    >
      <label for={id} class="visually-hidden">
        {t.holds.reasonFor(hold.hold_id)}
      </label>
      <input id={id} required maxLength={200} placeholder={t.holds.reason} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
      <button type="submit" class="danger-outline">
        {t.holds.release}
      </button>
      <ErrorNotice error={error} />
    </form>
  );
}
