import type { BalanceResponse, SpendReport } from "@meter/contracts";
import { api } from "../api";
import { Amount } from "../components/amount";
import { Layout } from "../components/layout";
import { ErrorNotice } from "../components/notice";
import { SpendChart } from "../components/spend-chart";
import { useLoad } from "../components/use-load";
import { useMember } from "../session";

/** The chosen organization's balance and where its money went over the last 30 days. */
export function OverviewPage() {
  const me = useMember();
  const org = me.organizations.find((o) => o.id === me.organization_id);
  const balance = useLoad(() => api<BalanceResponse>("GET", "/balance"), [me.organization_id]);
  const spend = useLoad(() => api<SpendReport>("GET", "/spend?days=30"), [me.organization_id]);
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
          <dl class="figures">
            <div>
              <dt>Available</dt>
              <dd data-testid="available">
                <Amount microrub={balance.data.available_microrub} />
              </dd>
            </div>
            <div>
              <dt>Reserved by requests in progress</dt>
              <dd data-testid="reserved">
                <Amount microrub={balance.data.reserved_microrub} />
              </dd>
            </div>
            <div>
              <dt>Balance</dt>
              <dd>
                <Amount microrub={balance.data.balance_microrub} />
              </dd>
            </div>
          </dl>
        )}
        <button type="button" class="quiet" onClick={() => (balance.reload(), spend.reload())}>
          Refresh
        </button>
      </section>
      <section aria-labelledby="spend-heading">
        <h2 id="spend-heading">Spend</h2>
        <ErrorNotice error={spend.error} />
        {spend.data && <SpendChart report={spend.data} />}
      </section>
    </Layout>
  );
}
