import type { CabinetKey } from "@meter/contracts";
import { api } from "../api";
import { Layout } from "../components/layout";
import { RequestLog } from "../components/request-log";
import { useLoad } from "../components/use-load";
import { useMember } from "../session";

/** The chosen organization's paid requests: every key's, the member's own keys offered as filters. */
export function RequestsPage() {
  const me = useMember();
  const keys = useLoad(() => api<{ data: CabinetKey[] }>("GET", "/keys"), [me.organization_id]);
  return (
    <Layout title="Requests">
      <RequestLog base="/requests" keys={keys.data?.data ?? []} budgetZone={me.budget_timezone} resetOn={me.organization_id} />
    </Layout>
  );
}
