import type { CabinetKey } from "@meter/contracts";
import { api } from "../api";
import { Layout } from "../components/layout";
import { RequestLog } from "../components/request-log";
import { useLoad } from "../components/use-load";
import { useT } from "../i18n/locale";
import { useMember } from "../session";

/** The chosen organization's requests and refusals: every key's, the member's own keys offered as filters. */
export function RequestsPage() {
  const me = useMember();
  const t = useT();
  const keys = useLoad(() => api<{ data: CabinetKey[] }>("GET", "/keys"), [me.organization_id]);
  return (
    <Layout title={t.requests.title}>
      <RequestLog base="/requests" keys={keys.data?.data ?? []} budgetZone={me.budget_timezone} resetOn={me.organization_id} />
    </Layout>
  );
}
