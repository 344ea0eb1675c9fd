import { useState } from "preact/hooks";
import type { AdminOrganization, AdminUser } from "@meter/contracts";
import { api, query } from "../../api";
import { Amount } from "../../components/amount";
import { CreditForm } from "../../components/credit-form";
import { DataTable } from "../../components/data-table";
import { DateTime } from "../../components/date-time";
import { Layout } from "../../components/layout";
import { Done, ErrorNotice } from "../../components/notice";
import { OrganizationSelect } from "../../components/organization-select";
import { Pager, usePages } from "../../components/pager";
import { useLoad } from "../../components/use-load";
import { followLink } from "../../router";
import { useSession } from "../../session";
import { useT } from "../../i18n/locale";

const PAGE = 25;

type OrganizationPage = { data: AdminOrganization[]; has_more: boolean; next_cursor: string | null };

/**
 * The organizations with their money, newest first, a page at a time and found by name or id; each
 * opens its own page. Credit one (asked twice, idempotent on its reference), create one, add a member.
 */
export function OrganizationsPage() {
  const { me } = useSession();
  const t = useT();
  const o8 = t.operator;
  const [typed, setTyped] = useState("");
  const [search, setSearch] = useState("");
  const pages = usePages();
  const { cursor } = pages;
  const orgs = useLoad(() => api<OrganizationPage>("GET", `/admin/organizations${query({ q: search, limit: PAGE, cursor })}`), [search, cursor]);
  const users = useLoad(() => api<{ data: AdminUser[] }>("GET", "/admin/users?limit=500"), []);
  return (
    <Layout title={t.nav.organizations}>
      <form
        class="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setSearch(typed.trim());
          pages.reset();
        }}
      >
        <label>
          {o8.findOrganization}
          <input type="search" placeholder={o8.findPlaceholder} value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
        </label>
        <button type="submit">{o8.find}</button>
        {search && (
          <button type="button" class="quiet" onClick={() => (setTyped(""), setSearch(""), pages.reset())}>
            {o8.showAll}
          </button>
        )}
      </form>
      <ErrorNotice error={orgs.error} />
      {orgs.data && (
        <DataTable
          testId="organizations"
          columns={[
            o8.columns.name,
            { label: o8.columns.members, num: true },
            { label: t.overview.available, num: true },
            { label: o8.columns.reserved, num: true },
            { label: t.overview.total, num: true },
            o8.columns.created,
          ]}
          rows={orgs.data.data}
          empty={search ? o8.noMatch(search) : o8.noOrganization}
          row={(o) => (
            <tr key={o.id}>
              <th scope="row">
                <a href={`/cabinet/operator/organizations/${o.id}`} onClick={followLink}>
                  {o.name}
                </a>{" "}
                <code class="id">{o.id}</code>
              </th>
              <td class="num">{o.members}</td>
              <td class="num">
                <Amount microrub={o.available_microrub} />
              </td>
              <td class="num">
                <Amount microrub={o.reserved_microrub} />
              </td>
              <td class="num">
                <Amount microrub={o.balance_microrub} />
              </td>
              <td>
                <DateTime iso={o.created_at} budgetZone={me.budget_timezone} />
              </td>
            </tr>
          )}
        />
      )}
      <Pager pages={pages} label={t.nav.organizations} hasMore={orgs.data?.has_more ?? false} next={orgs.data?.next_cursor} />
      <div class="columns">
        {orgs.data && <CreditForm key={`${search}-${cursor ?? ""}`} orgs={orgs.data.data} onDone={orgs.reload} />}
        <CreateOrganizationForm onDone={orgs.reload} />
        {orgs.data && users.data && <AddMemberForm orgs={orgs.data.data} users={users.data.data} onDone={() => (orgs.reload(), users.reload())} />}
      </div>
    </Layout>
  );
}

function CreateOrganizationForm({ onDone }: { onDone: () => void }) {
  const t = useT();
  const [name, setName] = useState("");
  const [error, setError] = useState<unknown>();
  const submit = (e: Event) => {
    e.preventDefault();
    api("POST", "/admin/organizations", { name }).then(() => {
      setName("");
      setError(undefined);
      onDone();
    }, setError);
  };
  return (
    <form onSubmit={submit} class="stack card" aria-labelledby="create-org-heading">
      <h2 id="create-org-heading">{t.operator.newOrganization}</h2>
      <label>
        {t.operator.columns.name}
        <input required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <ErrorNotice error={error} />
      <button type="submit">{t.operator.createOrganization}</button>
    </form>
  );
}

function AddMemberForm({ orgs, users, onDone }: { orgs: AdminOrganization[]; users: AdminUser[]; onDone: () => void }) {
  const t = useT();
  const [org, setOrg] = useState("");
  const [user, setUser] = useState(users[0]?.id ?? "");
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  const submit = (e: Event) => {
    e.preventDefault();
    if (!org) return setError(new Error(t.operator.chooseOrganization));
    api("POST", `/admin/organizations/${org}/members`, { user_id: user }).then(() => {
      setDone(t.operator.memberAdded(users.find((u) => u.id === user)?.email ?? user, orgs.find((o) => o.id === org)?.name ?? org));
      setError(undefined);
      onDone();
    }, setError);
  };
  return (
    <form onSubmit={submit} class="stack card" aria-labelledby="member-heading">
      <h2 id="member-heading">{t.operator.addMember}</h2>
      <label>
        {t.operator.user}
        <select value={user} onChange={(e) => setUser(e.currentTarget.value)} required>
          {users.map((u) => (
            <option key={u.id} value={u.id}>
              {u.email}
            </option>
          ))}
        </select>
      </label>
      <label>
        {t.layout.organization}
        <OrganizationSelect orgs={orgs} value={org} onChange={setOrg} none={t.credit.choose} />
      </label>
      <ErrorNotice error={error} />
      {done && <Done>{done}</Done>}
      <button type="submit">{t.operator.addMemberButton}</button>
    </form>
  );
}
