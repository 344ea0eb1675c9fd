import type { CabinetBalance, SpendReport } from "@meter/contracts";
import { useState } from "preact/hooks";
import { api, query } from "../api";
import { Figures } from "../components/figures";
import { Layout } from "../components/layout";
import { ErrorNotice } from "../components/notice";
import { SpendSection, type SpendWindow } from "../components/spend-details";
import { UsageAnalytics } from "../components/usage-analytics";
import { useLoad } from "../components/use-load";
import { useT } from "../i18n/locale";
import { useMember } from "../session";

/** The chosen organization's balance, its usage over time, and where its money went: per day, key, model and month. */
export function OverviewPage() {
  const me = useMember();
  const t = useT();
  const org = me.organizations.find((o) => o.id === me.organization_id);
  const balance = useLoad(() => api<CabinetBalance>("GET", "/balance"), [me.organization_id]);
  const [window, setWindow] = useState<SpendWindow>({});
  const spend = useLoad(
    () => api<SpendReport>("GET", `/spend${query(window.from ? { ...window } : { days: 30 })}`),
    [me.organization_id, window.from, window.to],
  );
  if (!org) {
    return (
      <Layout title={t.overview.plain}>
        <p>{t.overview.noOrganization}</p>
      </Layout>
    );
  }
  return (
    <Layout title={t.overview.title(org.name)}>
      <section aria-labelledby="balance-heading">
        <h2 id="balance-heading">{t.overview.balance}</h2>
        <ErrorNotice error={balance.error} />
        {balance.data && (
          <Figures
            figures={[
              { label: t.overview.available, microrub: balance.data.available_microrub, testId: "available" },
              { label: t.overview.reserved, microrub: balance.data.reserved_microrub - balance.data.set_aside_microrub, testId: "reserved" },
              balance.data.set_aside_microrub > 0 && {
                label: t.overview.setAside,
                microrub: balance.data.set_aside_microrub,
                testId: "set-aside",
                detail: t.overview.setAsideDetail,
              },
              { label: t.overview.total, microrub: balance.data.balance_microrub },
            ]}
          />
        )}
        <button type="button" class="quiet" onClick={() => (balance.reload(), spend.reload())}>
          {t.common.refresh}
        </button>
      </section>
      <UsageAnalytics base="/analytics" resetOn={me.organization_id} headingId="usage-heading" />
      <SpendSection headingId="spend-heading" window={window} onWindow={setWindow} spend={spend} />
    </Layout>
  );
}
