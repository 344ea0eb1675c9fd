import { useState } from "preact/hooks";
import type { AdminOrganization, AdminUser, BalanceResponse, CabinetLedgerLines, SpendReport, WebhookEndpoint } from "@meter/contracts";
import { api, query } from "../../api";
import { Amount } from "../../components/amount";
import { CreditForm } from "../../components/credit-form";
import { ACTIONS, DataTable } from "../../components/data-table";
import { DateTime } from "../../components/date-time";
import { DeliveryLog } from "../../components/delivery-log";
import { Figures } from "../../components/figures";
import { Layout } from "../../components/layout";
import { ErrorNotice } from "../../components/notice";
import { Pager, usePages } from "../../components/pager";
import { SpendSection, type SpendWindow } from "../../components/spend-details";
import { useLoad } from "../../components/use-load";
import { followLink } from "../../router";
import { useSession } from "../../session";
import { LedgerTable } from "../ledger";
import { useT } from "../../i18n/locale";

const PAGE = 25;
type AdminKey = {
  id: string;
  name: string | null;
  prefix: string;
  scopes: string[];
  daily_budget_microrub: number;
  status: string;
  created_at: string;
  user_id: string;
};

/** `/cabinet/operator/organizations/{id}`: the organization's id, or undefined for another address. */
export function organizationIdOf(path: string): string | undefined {
  return /^\/cabinet\/operator\/organizations\/([0-9a-f-]{36})$/i.exec(path)?.[1];
}

/** One organization as the operator sees it: its money, a credit, its members, keys and webhooks, its spend and its ledger. */
export function OrganizationPage({ id }: { id: string }) {
  const { me } = useSession();
  const t = useT();
  const g = t.organization;
  const org = useLoad(() => api<AdminOrganization>("GET", `/admin/organizations/${id}`), [id]);
  const balance = useLoad(() => api<BalanceResponse>("GET", `/admin/organizations/${id}/balance`), [id]);
  const keys = useLoad(() => api<{ data: AdminKey[] }>("GET", `/admin/keys${query({ organization_id: id })}`), [id]);
  const members = useLoad(() => api<{ data: AdminUser[] }>("GET", `/admin/users${query({ organization_id: id, limit: 500 })}`), [id]);
  const hooks = useLoad(() => api<{ data: WebhookEndpoint[] }>("GET", `/admin/organizations/${id}/webhooks`), [id]);
  const [logOf, setLogOf] = useState<WebhookEndpoint>();
  const [window, setWindow] = useState<SpendWindow>({});
  const spend = useLoad(() => api<SpendReport>("GET", `/admin/organizations/${id}/spend${query({ ...window })}`), [id, window.from, window.to]);
  const pages = usePages();
  const lines = useLoad(
    () => api<CabinetLedgerLines>("GET", `/admin/organizations/${id}/ledger/lines${query({ limit: PAGE, cursor: pages.cursor })}`),
    [id, pages.cursor],
  );
  const reload = () => (balance.reload(), lines.reload(), pages.reset());
  const name = org.data?.name ?? t.layout.organization;
  return (
    <Layout title={name}>
      <p>
        <a href="/cabinet/operator" onClick={followLink}>
          {g.all}
        </a>{" "}
        · <code class="id">{id}</code>
      </p>
      <ErrorNotice error={org.error} />
      <section aria-labelledby="org-balance">
        <h2 id="org-balance">{t.overview.balance}</h2>
        <ErrorNotice error={balance.error} />
        {balance.data && (
          <Figures
            testId="organization-balance"
            figures={[
              { label: t.overview.available, microrub: balance.data.available_microrub },
              { label: t.holds.reserved, microrub: balance.data.reserved_microrub },
              { label: t.overview.total, microrub: balance.data.balance_microrub },
            ]}
          />
        )}
      </section>
      {org.data && <CreditForm orgs={[org.data]} only={org.data} onDone={reload} />}
      <section aria-labelledby="org-members">
        <h2 id="org-members">{g.members}</h2>
        <ErrorNotice error={members.error} />
        {members.data && (
          <DataTable
            testId="organization-members"
            columns={[t.signIn.email, t.users.canSignIn, t.users.lastSignIn, t.operator.columns.created]}
            rows={members.data.data}
            empty={g.noMembers}
            row={(u) => (
              <tr key={u.id}>
                <th scope="row" class="wrap">
                  {u.email}
                </th>
                <td>{u.has_password ? t.users.yes : t.users.noPassword}</td>
                <td>{u.last_sign_in_at ? <DateTime iso={u.last_sign_in_at} budgetZone={me.budget_timezone} /> : t.users.never}</td>
                <td>
                  <DateTime iso={u.created_at} budgetZone={me.budget_timezone} />
                </td>
              </tr>
            )}
          />
        )}
      </section>
      <section aria-labelledby="org-webhooks">
        <h2 id="org-webhooks">{t.nav.webhooks}</h2>
        <ErrorNotice error={hooks.error} />
        {hooks.data && (
          <DataTable
            testId="organization-webhooks"
            columns={["URL", t.webhooks.events, t.operator.columns.created, ACTIONS]}
            rows={hooks.data.data}
            empty={t.webhooks.noEndpoints}
            row={(w) => (
              <tr key={w.id}>
                <th scope="row" class="wrap">
                  {w.url}
                </th>
                <td>{w.events.join(", ")}</td>
                <td>
                  <DateTime iso={w.created_at} budgetZone={me.budget_timezone} />
                </td>
                <td>
                  <button type="button" class="quiet" aria-label={g.deliveriesTo(w.url)} onClick={() => setLogOf(logOf?.id === w.id ? undefined : w)}>
                    {g.deliveries}
                  </button>
                </td>
              </tr>
            )}
          />
        )}
        {logOf && <DeliveryLog base={`/admin/organizations/${id}/webhooks/${logOf.id}`} url={logOf.url} budgetZone={me.budget_timezone} />}
      </section>
      <section aria-labelledby="org-keys">
        <h2 id="org-keys">{t.nav.keys}</h2>
        <ErrorNotice error={keys.error} />
        {keys.data && (
          <DataTable
            testId="organization-keys"
            columns={[
              t.keys.columns.name,
              t.keys.columns.key,
              t.keys.columns.scopes,
              { label: g.dailyBudget, num: true },
              t.keys.columns.status,
              t.keys.columns.created,
            ]}
            rows={keys.data.data}
            empty={t.keys.noKeys}
            row={(k) => (
              <tr key={k.id}>
                <th scope="row">{k.name ?? t.common.noName}</th>
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>
                  <code>{k.scopes.join(", ")}</code>
                </td>
                <td class="num">
                  <Amount microrub={k.daily_budget_microrub} />
                </td>
                <td>
                  <span class={`status status-${k.status}`}>{t.keys.status[k.status] ?? k.status}</span>
                </td>
                <td>
                  <DateTime iso={k.created_at} budgetZone={me.budget_timezone} />
                </td>
              </tr>
            )}
          />
        )}
      </section>
      <SpendSection headingId="org-spend" window={window} onWindow={setWindow} spend={spend} />
      <section aria-labelledby="org-ledger">
        <h2 id="org-ledger">{t.nav.ledger}</h2>
        <ErrorNotice error={lines.error} />
        {lines.data && <LedgerTable rows={lines.data.data} budgetZone={me.budget_timezone} empty={t.ledger.none} />}
        <Pager pages={pages} label={t.nav.ledger} hasMore={lines.data?.has_more ?? false} next={lines.data?.next_cursor} />
      </section>
    </Layout>
  );
}
