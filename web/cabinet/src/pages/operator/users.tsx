import { useState } from "preact/hooks";
import type { AdminOrganization, AdminUser, CreatedInvitation, Invitation } from "@meter/contracts";
import { api } from "../../api";
import { ConfirmButton } from "../../components/confirm-button";
import { DateTime } from "../../components/date-time";
import { ACTIONS, DataTable } from "../../components/data-table";
import { Layout } from "../../components/layout";
import { ErrorNotice } from "../../components/notice";
import { OrganizationSelect } from "../../components/organization-select";
import { SecretLine } from "../../components/secret";
import { useLoad } from "../../components/use-load";
import { useSession } from "../../session";

/** Invite people (a one-time sign-in link valid a day), see who can sign in, withdraw a pending link. */
export function UsersPage() {
  const { me } = useSession();
  const users = useLoad(() => api<{ data: AdminUser[] }>("GET", "/admin/users?limit=500"), []);
  const invitations = useLoad(() => api<{ data: Invitation[] }>("GET", "/admin/invitations?limit=100"), []);
  const orgs = useLoad(() => api<{ data: AdminOrganization[] }>("GET", "/admin/organizations?limit=500"), []);
  const [error, setError] = useState<unknown>();
  const zone = me.budget_timezone;
  return (
    <Layout title="Users and invitations">
      {orgs.data && <InviteForm orgs={orgs.data.data} onDone={() => (users.reload(), invitations.reload())} />}
      <section aria-labelledby="users-heading">
        <h2 id="users-heading">Users</h2>
        <ErrorNotice error={users.error} />
        {users.data && (
          <DataTable
            testId="users"
            columns={["Email", "Organizations", "Can sign in", "Last sign-in"]}
            rows={users.data.data}
            row={(u) => (
              <tr key={u.id}>
                <th scope="row">{u.email}</th>
                <td>{u.organizations.map((o) => o.name).join(", ") || "none"}</td>
                <td>{u.has_password ? "yes" : "not yet (no password)"}</td>
                <td>{u.last_sign_in_at ? <DateTime iso={u.last_sign_in_at} budgetZone={zone} /> : "never"}</td>
              </tr>
            )}
          />
        )}
      </section>
      <section aria-labelledby="invitations-heading">
        <h2 id="invitations-heading">Invitations</h2>
        <ErrorNotice error={invitations.error ?? error} />
        {invitations.data && (
          <DataTable
            testId="invitations"
            columns={["Email", "Status", "Sent", "Link works until", ACTIONS]}
            rows={invitations.data.data}
            empty="No invitations yet."
            row={(i) => (
              <tr key={i.id}>
                <th scope="row">{i.email}</th>
                <td>
                  <span class={`status status-${i.status}`}>{i.status}</span>
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
                      label={`Withdraw the link for ${i.email}`}
                      confirmLabel="Yes, withdraw it"
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
      <h2 id="invite-heading">Invite someone</h2>
      <form onSubmit={submit} class="stack">
        <label>
          Email
          <input type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </label>
        <label>
          Add to organization (optional)
          <OrganizationSelect orgs={orgs} value={org} onChange={setOrg} none="None" />
        </label>
        <ErrorNotice error={error} />
        <button type="submit" class="primary">
          Create sign-in link
        </button>
      </form>
      {sent && (
        <div class="secret" role="status">
          <p>
            Send this link to {sent.email}. It works once, until <DateTime iso={sent.expires_at} budgetZone={me.budget_timezone} />, and is shown only now;
            inviting again replaces it.
          </p>
          <SecretLine id="invitation-link" text={link} copyLabel="Copy link" />
        </div>
      )}
    </section>
  );
}
