import { useState } from "preact/hooks";
import type { AdminOrganization, AdminUser } from "@meter/contracts";
import { api } from "../../api";
import { Amount } from "../../components/amount";
import { DateTime } from "../../components/date-time";
import { Layout } from "../../components/layout";
import { Done, ErrorNotice } from "../../components/notice";
import { OrganizationSelect } from "../../components/organization-select";
import { useLoad } from "../../components/use-load";
import { exactRubles, parseRubles } from "../../lib/money";
import { useSession } from "../../session";

/** Every organization with its money; credit one (idempotent on its reference), create one, add a member. */
export function OrganizationsPage() {
  const { me } = useSession();
  const orgs = useLoad(() => api<{ data: AdminOrganization[] }>("GET", "/admin/organizations?limit=500"), []);
  const users = useLoad(() => api<{ data: AdminUser[] }>("GET", "/admin/users?limit=500"), []);
  return (
    <Layout title="Organizations">
      <ErrorNotice error={orgs.error} />
      {orgs.data && (
        <table data-testid="organizations">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col" class="num">
                Members
              </th>
              <th scope="col" class="num">
                Available
              </th>
              <th scope="col" class="num">
                Reserved
              </th>
              <th scope="col" class="num">
                Balance
              </th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {orgs.data.data.map((o) => (
              <tr key={o.id}>
                <th scope="row">
                  {o.name} <code class="id">{o.id}</code>
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
            ))}
          </tbody>
        </table>
      )}
      <div class="columns">
        {orgs.data && <CreditForm orgs={orgs.data.data} onDone={orgs.reload} />}
        <CreateOrganizationForm onDone={orgs.reload} />
        {orgs.data && users.data && <AddMemberForm orgs={orgs.data.data} users={users.data.data} onDone={() => (orgs.reload(), users.reload())} />}
      </div>
    </Layout>
  );
}

function CreditForm({ orgs, onDone }: { orgs: AdminOrganization[]; onDone: () => void }) {
  const [org, setOrg] = useState(orgs[0]?.id ?? "");
  const [amount, setAmount] = useState("");
  const [reference, setReference] = useState("");
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  const microrub = parseRubles(amount);
  const submit = (e: Event) => {
    e.preventDefault();
    if (!microrub) return setError(new Error("the amount must be a positive number of rubles, at most six decimals"));
    setError(undefined);
    api<{ id: number; balance_after_microrub: number }>("POST", `/admin/organizations/${org}/credits`, { amount_microrub: microrub, reference }).then(
      (entry) => {
        setDone(`Credited ${exactRubles(microrub)} to ${orgs.find((o) => o.id === org)?.name ?? org} (ledger entry ${entry.id}).`);
        setAmount("");
        setReference("");
        onDone();
      },
      setError,
    );
  };
  return (
    <form onSubmit={submit} class="stack card" aria-labelledby="credit-heading">
      <h2 id="credit-heading">Credit an organization</h2>
      <label>
        Organization
        <OrganizationSelect orgs={orgs} value={org} onChange={setOrg} />
      </label>
      <label>
        Amount, ₽
        <input inputMode="decimal" required value={amount} onInput={(e) => setAmount(e.currentTarget.value)} aria-describedby="credit-exact" />
      </label>
      <small id="credit-exact">{microrub ? `Exactly ${exactRubles(microrub)}` : "Up to six decimals: 1 ₽ = 1,000,000 microrub."}</small>
      <label>
        Reference (invoice, payment id)
        <input required maxLength={200} value={reference} onInput={(e) => setReference(e.currentTarget.value)} aria-describedby="credit-ref" />
      </label>
      <small id="credit-ref">Sending the same reference again does not credit twice.</small>
      <ErrorNotice error={error} />
      {done && <Done>{done}</Done>}
      <button type="submit" class="primary">
        Credit
      </button>
    </form>
  );
}

function CreateOrganizationForm({ onDone }: { onDone: () => void }) {
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
      <h2 id="create-org-heading">New organization</h2>
      <label>
        Name
        <input required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <ErrorNotice error={error} />
      <button type="submit">Create organization</button>
    </form>
  );
}

function AddMemberForm({ orgs, users, onDone }: { orgs: AdminOrganization[]; users: AdminUser[]; onDone: () => void }) {
  const [org, setOrg] = useState(orgs[0]?.id ?? "");
  const [user, setUser] = useState(users[0]?.id ?? "");
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  const submit = (e: Event) => {
    e.preventDefault();
    api("POST", `/admin/organizations/${org}/members`, { user_id: user }).then(() => {
      setDone(`${users.find((u) => u.id === user)?.email ?? user} is a member of ${orgs.find((o) => o.id === org)?.name ?? org}.`);
      setError(undefined);
      onDone();
    }, setError);
  };
  return (
    <form onSubmit={submit} class="stack card" aria-labelledby="member-heading">
      <h2 id="member-heading">Add a member</h2>
      <label>
        User
        <select value={user} onChange={(e) => setUser(e.currentTarget.value)} required>
          {users.map((u) => (
            <option key={u.id} value={u.id}>
              {u.email}
            </option>
          ))}
        </select>
      </label>
      <label>
        Organization
        <OrganizationSelect orgs={orgs} value={org} onChange={setOrg} />
      </label>
      <ErrorNotice error={error} />
      {done && <Done>{done}</Done>}
      <button type="submit">Add member</button>
    </form>
  );
}
