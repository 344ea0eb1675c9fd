import { useState } from "preact/hooks";
import type { AdminOrganization } from "@meter/contracts";
import { api, query } from "../../api";
import { Layout } from "../../components/layout";
import { ErrorNotice } from "../../components/notice";
import { RequestLog } from "../../components/request-log";
import { SearchField } from "../../components/search-field";
import { useLoad } from "../../components/use-load";
import { useSession } from "../../session";
import { useT } from "../../i18n/locale";

/** Any organization's request log, for the operator: choose the organization, then filter as a member would. */
export function OperatorRequestsPage() {
  const { me } = useSession();
  const t = useT();
  const [search, setSearch] = useState("");
  // Found by name, short or full id, or a member's email (GET /admin/organizations?q=), 50 at most.
  const orgs = useLoad(() => api<{ data: AdminOrganization[] }>("GET", `/admin/organizations${query({ limit: 50, q: search.trim() || undefined })}`), [search]);
  // The organization is in the page's address with the log's filters, so a link shows the same rows.
  const [org, setOrgState] = useState(() => new URLSearchParams(location.search).get("organization") ?? "");
  const setOrg = (id: string) => {
    const q = new URLSearchParams(id ? { organization: id } : {});
    history.replaceState(null, "", `${location.pathname}${id ? `?${q}` : ""}`);
    setOrgState(id);
  };
  const keys = useLoad(
    () => (org ? api<{ data: { id: string; name: string | null }[] }>("GET", `/admin/keys${query({ organization_id: org })}`) : Promise.resolve({ data: [] })),
    [org],
  );
  return (
    <Layout title={t.requests.title}>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <SearchField label={t.operator.findOrganization} value={search} onInput={setSearch} placeholder={t.operator.findPlaceholder} />
        <label>
          {t.layout.organization}
          <select name="organization" value={org} onChange={(e) => setOrg(e.currentTarget.value)}>
            <option value="">{t.organization.chooseOne}</option>
            {(orgs.data?.data ?? []).map((o) => (
              <option key={o.id} value={o.id}>
                {o.name} ({o.id.slice(0, 8)})
              </option>
            ))}
          </select>
        </label>
      </form>
      <ErrorNotice error={orgs.error ?? keys.error} />
      {org && <RequestLog base={`/admin/organizations/${org}/requests`} keys={keys.data?.data ?? []} budgetZone={me.budget_timezone} resetOn={org} />}
    </Layout>
  );
}
