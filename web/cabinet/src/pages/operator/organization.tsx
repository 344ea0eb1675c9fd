import { useState } from "preact/hooks";
import type { AdminOrganization, BalanceResponse, CabinetLedgerLines, SpendReport } from "@meter/contracts";
import { api, query } from "../../api";
import { Amount } from "../../components/amount";
import { CreditForm } from "../../components/credit-form";
import { DataTable } from "../../components/data-table";
import { DateTime } from "../../components/date-time";
import { Figures } from "../../components/figures";
import { Layout } from "../../components/layout";
import { ErrorNotice } from "../../components/notice";
import { Pager, usePages } from "../../components/pager";
import { SpendSection, type SpendWindow } from "../../components/spend-details";
import { useLoad } from "../../components/use-load";
import { followLink } from "../../router";
import { useSession } from "../../session";
import { LedgerTable } from "../ledger";

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

/** One organization as the operator sees it: its money, a credit, its keys, its spend and its ledger. */
export function OrganizationPage({ id }: { id: string }) {
  const { me } = useSession();
  const org = useLoad(() => api<AdminOrganization>("GET", `/admin/organizations/${id}`), [id]);
  const balance = useLoad(() => api<BalanceResponse>("GET", `/admin/organizations/${id}/balance`), [id]);
  const keys = useLoad(() => api<{ data: AdminKey[] }>("GET", `/admin/keys${query({ organization_id: id })}`), [id]);
  const [window, setWindow] = useState<SpendWindow>({});
  const spend = useLoad(() => api<SpendReport>("GET", `/admin/organizations/${id}/spend${query({ ...window })}`), [id, window.from, window.to]);
  const pages = usePages();
  const lines = useLoad(
    () => api<CabinetLedgerLines>("GET", `/admin/organizations/${id}/ledger/lines${query({ limit: PAGE, cursor: pages.cursor })}`),
    [id, pages.cursor],
  );
  const reload = () => (balance.reload(), lines.reload(), pages.reset());
  const name = org.data?.name ?? "Organization";
  return (
    <Layout title={name}>
      <p>
        <a href="/cabinet/operator" onClick={followLink}>
          All organizations
        </a>{" "}
        · <code class="id">{id}</code>
      </p>
      <ErrorNotice error={org.error} />
      <section aria-labelledby="org-balance">
        <h2 id="org-balance">Balance</h2>
        <ErrorNotice error={balance.error} />
        {balance.data && (
          <Figures
            testId="organization-balance"
            figures={[
              { label: "Available", microrub: balance.data.available_microrub },
              { label: "Reserved", microrub: balance.data.reserved_microrub },
              { label: "Balance", microrub: balance.data.balance_microrub },
            ]}
          />
        )}
      </section>
      {org.data && <CreditForm orgs={[org.data]} only={org.data} onDone={reload} />}
      <section aria-labelledby="org-keys">
        <h2 id="org-keys">API keys</h2>
        <ErrorNotice error={keys.error} />
        {keys.data && (
          <DataTable
            testId="organization-keys"
            columns={["Name", "Key", "Scopes", { label: "Daily budget", num: true }, "Status", "Created"]}
            rows={keys.data.data}
            empty="No keys."
            row={(k) => (
              <tr key={k.id}>
                <th scope="row">{k.name ?? "(no name)"}</th>
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>{k.scopes.join(", ")}</td>
                <td class="num">
                  <Amount microrub={k.daily_budget_microrub} />
                </td>
                <td>
                  <span class={`status status-${k.status}`}>{k.status}</span>
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
        <h2 id="org-ledger">Ledger</h2>
        <ErrorNotice error={lines.error} />
        {lines.data && <LedgerTable rows={lines.data.data} budgetZone={me.budget_timezone} empty="Nothing yet." />}
        <Pager pages={pages} label="Ledger pages" hasMore={lines.data?.has_more ?? false} next={lines.data?.next_cursor} />
      </section>
    </Layout>
  );
}
