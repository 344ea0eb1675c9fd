import { useState } from "preact/hooks";
import type { ProviderStatus, TextModelProviders, TextRequestView } from "@meter/contracts";
import { api } from "../../api";
import { Amount } from "../../components/amount";
import { DateTime } from "../../components/date-time";
import { Layout } from "../../components/layout";
import { ErrorNotice } from "../../components/notice";
import { useLoad } from "../../components/use-load";
import { useSession } from "../../session";

/** Breaker states as the operator reads them, with the status colours the other pages use. */
export const STATE: Record<NonNullable<ProviderStatus["state"]>, { label: string; css: string }> = {
  closed: { label: "in use", css: "status-active" },
  half_open: { label: "trial call next", css: "status-reserved" },
  open: { label: "cooling down", css: "status-failed" },
};

/**
 * Each text model's upstream providers with their health (shared by every text replica), and one
 * request looked up by id: which provider served it and which refused it. Key holders never see this.
 */
export function ProvidersPage() {
  const { me } = useSession();
  const models = useLoad(() => api<{ data: TextModelProviders[] }>("GET", "/admin/text/providers"), []);
  return (
    <Layout title="Upstream providers">
      <p>
        A request goes to a model's providers by priority (lower first), spread by weight among equals, and moves on only when nothing ran on the one before.
        The customer pays the model's tariff whatever served.
      </p>
      <RequestLookup initial={new URLSearchParams(location.search).get("request") ?? ""} zone={me.budget_timezone} />
      <h2>Providers by model</h2>
      <button type="button" onClick={models.reload}>
        Refresh
      </button>
      <ErrorNotice error={models.error} />
      {models.data && (
        <table data-testid="providers">
          <thead>
            <tr>
              <th scope="col">Model</th>
              <th scope="col">Provider</th>
              <th scope="col" class="num">
                Priority · weight
              </th>
              <th scope="col">State</th>
              <th scope="col" class="num">
                This minute (cap)
              </th>
            </tr>
          </thead>
          <tbody>
            {models.data.data.flatMap((m) =>
              m.providers.map((p, i) => (
                <tr key={`${m.model} ${p.id}`}>
                  {i === 0 && (
                    <th scope="row" rowSpan={m.providers.length}>
                      {m.model}
                      {!m.enabled && <div class="detail">disabled</div>}
                    </th>
                  )}
                  <td>
                    {p.kind} <span class="detail">{p.host ?? "built in"}</span>
                    {p.upstream_model && <div class="detail">{p.upstream_model}</div>}
                    <code class="id">{p.id}</code>
                  </td>
                  <td class="num">
                    {p.priority} · {p.weight}
                  </td>
                  <td>
                    {p.state === null ? (
                      <span class="detail">only provider: retried inline, no breaker</span>
                    ) : (
                      <>
                        <span class={`status ${STATE[p.state].css}`}>{STATE[p.state].label}</span>
                        {p.consecutive_failures > 0 && <div class="detail">{p.consecutive_failures} failures in a row</div>}
                        {p.open_until && (
                          <div class="detail">
                            until <DateTime iso={p.open_until} budgetZone={me.budget_timezone} />
                          </div>
                        )}
                      </>
                    )}
                  </td>
                  <td class="num">
                    {p.rpm === null && p.tpm === null ? (
                      <span class="detail">no cap</span>
                    ) : (
                      <>
                        {p.rpm !== null && (
                          <div>
                            {p.minute_calls} / {p.rpm} calls
                          </div>
                        )}
                        {p.tpm !== null && (
                          <div>
                            {p.minute_tokens} / {p.tpm} tokens
                          </div>
                        )}
                      </>
                    )}
                  </td>
                </tr>
              )),
            )}
          </tbody>
        </table>
      )}
    </Layout>
  );
}

/** A request by its id (a hold's owner, or the `msg_`/`resp_` id a customer quotes). */
function RequestLookup({ initial, zone }: { initial: string; zone: string }) {
  const [id, setId] = useState(initial);
  const [asked, setAsked] = useState(initial);
  const found = useLoad(() => (asked ? api<TextRequestView>("GET", `/admin/text/requests/${encodeURIComponent(asked)}`) : Promise.resolve(undefined)), [asked]);
  return (
    <section class="card" aria-labelledby="lookup-heading">
      <h2 id="lookup-heading">Which provider served a request</h2>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setAsked(id.trim());
        }}
      >
        <label>
          Request id (msg_…, resp_… or a hold's owner)
          <input value={id} onInput={(e) => setId(e.currentTarget.value)} required />
        </label>
        <button type="submit">Look up</button>
      </form>
      <ErrorNotice error={found.error} />
      {found.data && (
        <dl data-testid="text-request">
          <dt>Model</dt>
          <dd>
            {found.data.model} · {found.data.endpoint} · {found.data.status} after {found.data.attempts} attempt(s)
          </dd>
          <dt>Accepted</dt>
          <dd>
            <DateTime iso={found.data.created_at} budgetZone={zone} />
          </dd>
          <dt>Served by</dt>
          <dd>
            {found.data.served_by ? (
              <code class="id">{found.data.served_by}</code>
            ) : (
              <span class="detail">nobody{found.data.sent_to ? ` (last sent to ${found.data.sent_to})` : ""}</span>
            )}
          </dd>
          <dt>Refused by</dt>
          <dd>
            {found.data.refused_by.length === 0 ? (
              <span class="detail">none</span>
            ) : (
              found.data.refused_by.map((p) => (
                <div key={p}>
                  <code class="id">{p}</code>
                </div>
              ))
            )}
          </dd>
          <dt>Charged</dt>
          <dd>
            {found.data.cost_microrub === null ? "not yet final" : <Amount microrub={found.data.cost_microrub} />} (held{" "}
            <Amount microrub={found.data.estimated_cost_microrub} />)
          </dd>
          {found.data.error && (
            <>
              <dt>Error</dt>
              <dd>
                {found.data.error.code}: {found.data.error.message}
              </dd>
            </>
          )}
        </dl>
      )}
    </section>
  );
}
