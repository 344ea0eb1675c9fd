import { useState } from "preact/hooks";
import type { CabinetKey, Scope } from "@meter/contracts";
import { api } from "../api";
import { Amount } from "../components/amount";
import { CheckList } from "../components/check-list";
import { ConfirmButton } from "../components/confirm-button";
import { ACTIONS, DataTable } from "../components/data-table";
import { DailyBudgetField } from "../components/daily-budget-field";
import { DateTime } from "../components/date-time";
import { Layout } from "../components/layout";
import { Done, ErrorNotice } from "../components/notice";
import { ShownOnce } from "../components/secret";
import { useLoad } from "../components/use-load";
import { parseRubles } from "../lib/money";
import { useMember } from "../session";
import { KeyEditForm } from "./key-edit-form";

const SCOPES: { value: Scope; what: string }[] = [
  { value: "text", what: "text generation, OCR and text analysis" },
  { value: "images", what: "image editing and analysis" },
  { value: "files:read", what: "read and download files" },
  { value: "files:write", what: "upload and delete files" },
  { value: "mcp:read", what: "MCP: read-only tools" },
  { value: "mcp:invoke", what: "MCP: paid tools" },
];

/** The member's own keys in the chosen organization: create (shown once), today's spend, revoke. */
export function KeysPage() {
  const me = useMember();
  const keys = useLoad(() => api<{ data: CabinetKey[] }>("GET", "/keys"), [me.organization_id]);
  const [created, setCreated] = useState<(CabinetKey & { key: string }) | undefined>();
  const [revoked, setRevoked] = useState<string | undefined>();
  const [editing, setEditing] = useState<string | undefined>();
  const [saved, setSaved] = useState<string | undefined>();
  const [showRevoked, setShowRevoked] = useState(false);
  const [error, setError] = useState<unknown>();
  const all = keys.data?.data;
  const shown = all?.filter((k) => showRevoked || k.status === "active");
  const hidden = (all?.length ?? 0) - (shown?.length ?? 0);
  return (
    <Layout title="API keys">
      <CreateKeyForm
        onCreated={(k) => {
          setCreated(k);
          setRevoked(undefined);
          keys.reload();
        }}
      />
      {created && (
        <ShownOnce
          headingId="new-key-heading"
          title={<>Your new key “{created.name}”</>}
          secretId="new-key"
          secret={created.key}
          copyLabel="Copy key"
          onSaved={() => setCreated(undefined)}
        >
          <p>Copy it now: it is shown only this once. Keep it secret, like a password.</p>
        </ShownOnce>
      )}
      <section aria-labelledby="keys-heading">
        <h2 id="keys-heading">Your keys</h2>
        <ErrorNotice error={keys.error ?? error} />
        {revoked && <Done>Key {revoked} is revoked: every gateway refuses it within a second.</Done>}
        {saved && <Done>Key {saved} is changed.</Done>}
        {all && all.some((k) => k.status !== "active") && (
          <label class="check">
            <input type="checkbox" name="show_revoked" checked={showRevoked} onChange={(e) => setShowRevoked(e.currentTarget.checked)} />
            Show revoked and expired keys{hidden > 0 && ` (${hidden} hidden)`}
          </label>
        )}
        {all && all.length === 0 && <p>No keys yet.</p>}
        {all && all.length > 0 && shown && (
          <DataTable
            caption={`Today's spend (budget day ${shown[0]?.usage.day ?? ""}) counts charges settled since 00:00 ${me.budget_timezone} and every request still reserved.`}
            columns={["Name", "Key", "Scopes", "Today (budget day)", "Created", "Status", ACTIONS]}
            rows={shown}
            empty="No active keys."
            row={(k) => (
              <tr key={k.id} data-key-id={k.id}>
                <th scope="row">{k.name ?? "(no name)"}</th>
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>{k.scopes.join(", ")}</td>
                <td>
                  <BudgetUse k={k} />
                </td>
                <td>
                  <DateTime iso={k.created_at} budgetZone={me.budget_timezone} />
                </td>
                <td>
                  <span class={`status status-${k.status}`}>{k.status}</span>
                  {k.status === "active" && k.expires_at && (
                    <small>
                      {" "}
                      until <DateTime iso={k.expires_at} budgetZone={me.budget_timezone} />
                    </small>
                  )}
                  {k.budget_alert_percents.length > 0 && <small> alerts at {k.budget_alert_percents.join(", ")} %</small>}
                </td>
                <td>
                  {k.status === "active" && editing !== k.id && (
                    <button type="button" class="quiet" aria-label={`Change ${k.name ?? k.prefix}`} onClick={() => setEditing(k.id)}>
                      Change
                    </button>
                  )}
                  {k.status === "active" && editing === k.id && (
                    <KeyEditForm
                      k={k}
                      onCancel={() => setEditing(undefined)}
                      onSaved={(changed) => {
                        setEditing(undefined);
                        setSaved(changed.name ?? changed.prefix);
                        setRevoked(undefined);
                        keys.reload();
                      }}
                    />
                  )}{" "}
                  {k.status === "active" && (
                    <ConfirmButton
                      label="Revoke"
                      name={`Revoke ${k.name ?? k.prefix}`}
                      confirmLabel="Yes, revoke it"
                      onConfirm={async () => {
                        try {
                          await api("POST", `/keys/${k.id}/revoke`);
                          setRevoked(k.name ?? k.prefix);
                          keys.reload();
                        } catch (e) {
                          setError(e);
                        }
                      }}
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

function BudgetUse({ k }: { k: CabinetKey }) {
  const used = k.usage.spent_microrub + k.usage.reserved_microrub;
  return (
    <span class="budget" data-testid="budget-use">
      <Amount microrub={k.usage.spent_microrub} /> spent
      {k.usage.reserved_microrub > 0 && (
        <>
          {" "}
          + <Amount microrub={k.usage.reserved_microrub} /> reserved
        </>
      )}{" "}
      of <Amount microrub={k.daily_budget_microrub} />
      <meter min={0} max={Math.max(k.daily_budget_microrub, 1)} value={used} aria-label={`Budget used on ${k.usage.day}`} />
    </span>
  );
}

function CreateKeyForm({ onCreated }: { onCreated: (k: CabinetKey & { key: string }) => void }) {
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<Scope[]>(["text"]);
  const [budget, setBudget] = useState("100");
  const [error, setError] = useState<unknown>();
  const budgetMicrorub = parseRubles(budget);
  const submit = (e: Event) => {
    e.preventDefault();
    if (budgetMicrorub === undefined) return setError(new Error("the daily budget must be an amount in rubles, like 100 or 12.50"));
    if (scopes.length === 0) return setError(new Error("choose at least one scope"));
    setError(undefined);
    api<CabinetKey & { key: string }>("POST", "/keys", { name, scopes, daily_budget_microrub: budgetMicrorub }).then((k) => {
      setName("");
      onCreated(k);
    }, setError);
  };
  return (
    <section aria-labelledby="create-heading">
      <h2 id="create-heading">Create a key</h2>
      <form onSubmit={submit} class="stack">
        <label>
          Name
          <input name="name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="e.g. laptop, CI" />
        </label>
        <CheckList legend="Scopes: what the key may do" name="scope" options={SCOPES} chosen={scopes} onChange={setScopes} />
        <DailyBudgetField value={budget} onInput={setBudget} helpId="budget-help" />
        <small id="budget-help">Requests that would take the key past this in one budget day are refused (429).</small>
        <ErrorNotice error={error} />
        <button type="submit" class="primary">
          Create key
        </button>
      </form>
    </section>
  );
}
