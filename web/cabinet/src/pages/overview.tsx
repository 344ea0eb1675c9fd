import type { CabinetBalance, SpendReport } from "@meter/contracts";
import { useState } from "preact/hooks";
import { api, query } from "../api";
import { Figures } from "../components/figures";
import { Layout } from "../components/layout";
import { ErrorNotice } from "../components/notice";
import { SpendSection, type SpendWindow } from "../components/spend-details";
import { useLoad } from "../components/use-load";
import { useMember } from "../session";

/** The chosen organization's balance and where its money went: per day, key, model and month. */
export function OverviewPage() {
  const me = useMember();
  const org = me.organizations.find((o) => o.id === me.organization_id);
  const balance = useLoad(() => api<CabinetBalance>("GET", "/balance"), [me.organization_id]);
  const [window, setWindow] = useState<SpendWindow>({});
  const spend = useLoad(
    () => api<SpendReport>("GET", `/spend${query(window.from ? { ...window } : { days: 30 })}`),
    [me.organization_id, window.from, window.to],
  );
  if (!org) {
    return (
      <Layout title="Overview">
        <p>You are not a member of any organization yet: ask your operator to add you to one.</p>
      </Layout>
    );
  }
  return (
    <Layout title={`Overview: ${org.name}`}>
      <section aria-labelledby="balance-heading">
        <h2 id="balance-heading">Balance</h2>
        <ErrorNotice error={balance.error} />
        {balance.data && (
          <Figures
            figures={[
              { label: "Available", microrub: balance.data.available_microrub, testId: "available" },
              { label: "Reserved by requests in progress", microrub: balance.data.reserved_microrub - balance.data.set_aside_microrub, testId: "reserved" },
              balance.data.set_aside_microrub > 0 && {
                label: "Set aside for keys' next requests",
                microrub: balance.data.set_aside_microrub,
                testId: "set-aside",
                detail: "returned within seconds once they stop",
              },
              { label: "Balance", microrub: balance.data.balance_microrub },
            ]}
          />
        )}
        <button type="button" class="quiet" onClick={() => (balance.reload(), spend.reload())}>
          Refresh
        </button>
      </section>
      <SpendSection headingId="spend-heading" window={window} onWindow={setWindow} spend={spend} />
    </Layout>
  );
}
