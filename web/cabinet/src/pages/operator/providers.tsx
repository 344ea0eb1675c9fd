import { useState } from "preact/hooks";
import type { ProviderStatus, TextModelProviders, TextRequestView } from "@meter/contracts";
import { api } from "../../api";
import { Amount } from "../../components/amount";
import { DateTime } from "../../components/date-time";
import { Layout } from "../../components/layout";
import { ErrorNotice } from "../../components/notice";
import { useLoad } from "../../components/use-load";
import { useSession } from "../../session";
import { useI18n, useT } from "../../i18n/locale";

/** Breaker states with the status colours the other pages use (their words: t.health.states). */
export const STATE: Record<NonNullable<ProviderStatus["state"]>, { css: string }> = {
  closed: { css: "status-active" },
  half_open: { css: "status-reserved" },
  open: { css: "status-failed" },
};

/**
 * Each text model's upstream providers with their health (shared by every text replica), and one
 * request looked up by id: which provider served it and which refused it. Key holders never see this.
 */
export function ProvidersPage() {
  const { me } = useSession();
  const { t, tag } = useI18n();
  const p8 = t.providers;
  const n = (x: number) => new Intl.NumberFormat(tag).format(x);
  const models = useLoad(() => api<{ data: TextModelProviders[] }>("GET", "/admin/text/providers"), []);
  return (
    <Layout title={t.nav.providers}>
      <p>{p8.intro}</p>
      <RequestLookup initial={new URLSearchParams(location.search).get("request") ?? ""} zone={me.budget_timezone} />
      <h2>{p8.byModel}</h2>
      <button type="button" onClick={models.reload}>
        {t.common.refresh}
      </button>
      <ErrorNotice error={models.error} />
      {models.data && (
        <table data-testid="providers">
          <thead>
            <tr>
              <th scope="col">{p8.model}</th>
              <th scope="col">{p8.provider}</th>
              <th scope="col" class="num">
                {p8.priorityWeight}
              </th>
              <th scope="col">{p8.state}</th>
              <th scope="col" class="num">
                {p8.minute}
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
                      {!m.enabled && <div class="detail">{p8.disabled}</div>}
                    </th>
                  )}
                  <td>
                    {p.kind} <span class="detail">{p.host ?? p8.builtIn}</span>
                    {p.upstream_model && <div class="detail">{p.upstream_model}</div>}
                    <code class="id">{p.id}</code>
                  </td>
                  <td class="num">
                    {p.priority} · {p.weight}
                  </td>
                  <td>
                    {p.state === null ? (
                      <span class="detail">{p8.onlyProvider}</span>
                    ) : (
                      <>
                        <span class={`status ${STATE[p.state].css}`}>{t.health.states[p.state] ?? p.state}</span>
                        {p.consecutive_failures > 0 && <div class="detail">{p8.failures(p.consecutive_failures)}</div>}
                        {p.open_until && (
                          <div class="detail">
                            {p8.until} <DateTime iso={p.open_until} budgetZone={me.budget_timezone} />
                          </div>
                        )}
                      </>
                    )}
                  </td>
                  <td class="num">
                    {p.rpm === null && p.tpm === null ? (
                      <span class="detail">{p8.noCap}</span>
                    ) : (
                      <>
                        {p.rpm !== null && <div>{p8.calls(n(p.minute_calls), n(p.rpm))}</div>}
                        {p.tpm !== null && <div>{p8.tokens(n(p.minute_tokens), n(p.tpm))}</div>}
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
  const t = useT();
  const p8 = t.providers;
  const [id, setId] = useState(initial);
  const [asked, setAsked] = useState(initial);
  const found = useLoad(() => (asked ? api<TextRequestView>("GET", `/admin/text/requests/${encodeURIComponent(asked)}`) : Promise.resolve(undefined)), [asked]);
  return (
    <section class="card" aria-labelledby="lookup-heading">
      <h2 id="lookup-heading">{p8.lookup}</h2>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setAsked(id.trim());
        }}
      >
        <label>
          {p8.requestId}
          <input value={id} onInput={(e) => setId(e.currentTarget.value)} required />
        </label>
        <button type="submit">{p8.lookUp}</button>
      </form>
      <ErrorNotice error={found.error} />
      {found.data && (
        <dl data-testid="text-request">
          <dt>{p8.model}</dt>
          <dd>
            {found.data.model} · {found.data.endpoint} · {p8.statusAfter(p8.statuses[found.data.status] ?? found.data.status, found.data.attempts)}
          </dd>
          <dt>{p8.accepted}</dt>
          <dd>
            <DateTime iso={found.data.created_at} budgetZone={zone} />
          </dd>
          <dt>{p8.servedBy}</dt>
          <dd>
            {found.data.served_by ? (
              <code class="id">{found.data.served_by}</code>
            ) : (
              <span class="detail">
                {p8.nobody}
                {found.data.sent_to ? p8.lastSentTo(found.data.sent_to) : ""}
              </span>
            )}
          </dd>
          <dt>{p8.refusedBy}</dt>
          <dd>
            {found.data.refused_by.length === 0 ? (
              <span class="detail">{p8.none}</span>
            ) : (
              found.data.refused_by.map((p) => (
                <div key={p}>
                  <code class="id">{p}</code>
                </div>
              ))
            )}
          </dd>
          <dt>{p8.charged}</dt>
          <dd>
            {found.data.cost_microrub === null ? p8.notFinal : <Amount microrub={found.data.cost_microrub} />} ({p8.held}{" "}
            <Amount microrub={found.data.estimated_cost_microrub} />)
          </dd>
          {found.data.error && (
            <>
              <dt>{p8.error}</dt>
              <dd translate={false}>
                {found.data.error.code}: {found.data.error.message}
              </dd>
            </>
          )}
        </dl>
      )}
    </section>
  );
}
