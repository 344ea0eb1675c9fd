import { useState } from "preact/hooks";
import type { AdminOrganization, AdminUser, CreatedInvitation, Invitation } from "@meter/contracts";
import { api, query } from "../../api";
import { ConfirmButton } from "../../components/confirm-button";
import { DateTime } from "../../components/date-time";
import { ACTIONS, DataTable } from "../../components/data-table";
import { Layout } from "../../components/layout";
import { ErrorNotice } from "../../components/notice";
import { OrganizationSelect } from "../../components/organization-select";
import { SecretLine } from "../../components/secret";
import { SearchField } from "../../components/search-field";
import { useLoad } from "../../components/use-load";
import { useSession } from "../../session";
import { useT } from "../../i18n/locale";

/** Invite people (a one-time sign-in link valid a day), see who can sign in, withdraw a pending link. */
export function UsersPage() {
  const { me } = useSession();
  const t = useT();
  const u8 = t.users;
  const [search, setSearch] = useState("");
  const users = useLoad(() => api<{ data: AdminUser[] }>("GET", `/admin/users${query({ limit: 500, q: search.trim() || undefined })}`), [search]);
  const invitations = useLoad(() => api<{ data: Invitation[] }>("GET", "/admin/invitations?limit=100"), []);
  const orgs = useLoad(() => api<{ data: AdminOrganization[] }>("GET", "/admin/organizations?limit=500"), []);
  const [error, setError] = useState<unknown>();
  const zone = me.budget_timezone;
  return (
    <Layout title={t.nav.users}>
      {orgs.data && <InviteForm orgs={orgs.data.data} onDone={() => (users.reload(), invitations.reload())} />}
      <section aria-labelledby="users-heading">
        <h2 id="users-heading">{u8.users}</h2>
        <SearchField label={u8.find} value={search} onInput={setSearch} placeholder={u8.findPlaceholder} />
        <ErrorNotice error={users.error} />
        {users.data && (
          <DataTable
            testId="users"
            columns={[t.signIn.email, t.nav.organizations, u8.canSignIn, u8.lastSignIn]}
            rows={users.data.data}
            empty={search ? u8.noMatch : u8.none}
            row={(u) => (
              <tr key={u.id}>
                <th scope="row">{u.email}</th>
                <td>{u.organizations.map((o) => o.name).join(", ") || u8.noOrganizations}</td>
                <td>{u.has_password ? u8.yes : u8.noPassword}</td>
                <td>{u.last_sign_in_at ? <DateTime iso={u.last_sign_in_at} budgetZone={zone} /> : u8.never}</td>
              </tr>
            )}
          />
        )}
      </section>
      <section aria-labelledby="invitations-heading">
        <h2 id="invitations-heading">{u8.invitations}</h2>
        <ErrorNotice error={invitations.error ?? error} />
        {invitations.data && (
          <DataTable
            testId="invitations"
            columns={[t.signIn.email, t.ledger.status, u8.sent, u8.until, ACTIONS]}
            rows={invitations.data.data}
            empty={u8.noInvitations}
            row={(i) => (
              <tr key={i.id}>
                <th scope="row">{i.email}</th>
                <td>
                  <span class={`status status-${i.status}`}>{u8.invitationStatus[i.status] ?? i.status}</span>
                </td>
                <td>
                  <DateTime iso={i.created_at} budgetZone={zone} />
                </td>
                <td>
                  <DateTime iso={i.expires_at} budgetZone={zone} />
                </td>
                <td>
                  {i.status === "pending" && (
                    <ConfirmButton
                      label={u8.withdraw(i.email)}
                      confirmLabel={u8.withdrawConfirm}
                      onConfirm={() => api("POST", `/admin/invitations/${i.id}/revoke`).then(invitations.reload, setError)}
                    />
                  )}
                </td>
              </tr>
            )}
          />
        )}
      </section>
    </Layout>
  );
}

function InviteForm({ orgs, onDone }: { orgs: AdminOrganization[]; onDone: () => void }) {
  const { me } = useSession();
  const t = useT();
  const u8 = t.users;
  const [email, setEmail] = useState("");
  const [org, setOrg] = useState("");
  const [error, setError] = useState<unknown>();
  const [sent, setSent] = useState<CreatedInvitation>();
  const submit = (e: Event) => {
    e.preventDefault();
    setError(undefined);
    api<CreatedInvitation>("POST", "/admin/invitations", { email, ...(org ? { organization_id: org } : {}) }).then((inv) => {
      setSent(inv);
      setEmail("");
      onDone();
    }, setError);
  };
  const link = sent ? `${location.origin}${sent.link_path}` : "";
  return (
    <section aria-labelledby="invite-heading">
      <h2 id="invite-heading">{u8.invite}</h2>
      <form onSubmit={submit} class="stack">
        <label>
          {t.signIn.email}
          <input type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </label>
        <label>
          {u8.addTo}
          <OrganizationSelect orgs={orgs} value={org} onChange={setOrg} none={u8.noneOrg} />
        </label>
        <ErrorNotice error={error} />
        <button type="submit" class="primary">
          {u8.createLink}
        </button>
      </form>
      {sent && (
        <div class="secret" role="status">
          <p>
            {u8.sendLink(sent.email)} <DateTime iso={sent.expires_at} budgetZone={me.budget_timezone} />
            {u8.sendLinkTail}
          </p>
          <SecretLine id="invitation-link" text={link} copyLabel={u8.copyLink} />
        </div>
      )}
    </section>
  );
}
