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

/**
 * Holds active for longer than a few minutes, oldest first: billing's audit asks their owners about
 * them on its own; the operator can free one by hand, giving the reason the ledger will keep.
 */
export function HoldsPage() {
  const { me } = useSession();
  const [minutes, setMinutes] = useState("5");
  const olderThan = Math.max(0, Math.floor(Number(minutes) || 0)) * 60;
  const holds = useLoad(() => api<{ data: Hold[] }>("GET", `/admin/holds${query({ status: "active", older_than_s: olderThan, limit: 200 })}`), [olderThan]);
  const [done, setDone] = useState<string>();
  return (
    <Layout title="Stale holds">
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Active for more than (minutes)
          <input type="number" min={0} value={minutes} onInput={(e) => setMinutes(e.currentTarget.value)} />
        </label>
        <button type="button" onClick={holds.reload}>
          Refresh
        </button>
      </form>
      <ErrorNotice error={holds.error} />
      {done && <Done>{done}</Done>}
      {holds.data && (
        <DataTable
          testId="holds"
          columns={["Placed", { label: "Reserved", num: true }, "Owner", "Model · operation", "Organization / key", "Release"]}
          rows={holds.data.data}
          empty="No hold has been active that long."
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
                  <a href={`/cabinet/operator/providers?request=${h.owner_ref}`} title="Which provider it was sent to">
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
                    setDone(`Released hold ${h.hold_id}: nothing is charged for it.`);
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
        Reason for releasing hold {hold.hold_id}
      </label>
      <input id={id} required maxLength={200} placeholder="reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
      <button type="submit" class="danger-outline">
        Release
      </button>
      <ErrorNotice error={error} />
    </form>
  );
}
