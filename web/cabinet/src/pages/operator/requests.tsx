import { useState } from "preact/hooks";
import type { AdminOrganization } from "@meter/contracts";
import { api, query } from "../../api";
import { Layout } from "../../components/layout";
import { ErrorNotice } from "../../components/notice";
import { RequestLog } from "../../components/request-log";
import { useLoad } from "../../components/use-load";
import { useSession } from "../../session";

/** Any organization's request log, for the operator: choose the organization, then filter as a member would. */
export function OperatorRequestsPage() {
  const { me } = useSession();
  const orgs = useLoad(() => api<{ data: AdminOrganization[] }>("GET", "/admin/organizations?limit=500"), []);
  const [org, setOrg] = useState("");
  const keys = useLoad(
    () => (org ? api<{ data: { id: string; name: string | null }[] }>("GET", `/admin/keys${query({ organization_id: org })}`) : Promise.resolve({ data: [] })),
    [org],
  );
  return (
    <Layout title="Requests">
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Organization
          <select name="organization" value={org} onChange={(e) => setOrg(e.currentTarget.value)}>
            <option value="">Choose one…</option>
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
