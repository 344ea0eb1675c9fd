import type { BrokerHealth, HealthReport, ProvidersHealth, ServiceHealth } from "@meter/contracts";
import { api } from "../../api";
import { DataTable } from "../../components/data-table";
import { DateTime } from "../../components/date-time";
import { Layout } from "../../components/layout";
import { ErrorNotice } from "../../components/notice";
import { useLoad } from "../../components/use-load";
import { followLink } from "../../router";
import { useSession } from "../../session";
import { STATE } from "./providers";
import { useT } from "../../i18n/locale";

/**
 * The system at a glance for the operator: each service's readiness (every text replica), the broker's
 * queues with their dead letters, and the upstream providers' breakers. The gateway asks them all at
 * once when the page loads or is refreshed; a part it could not read says why.
 */
export function HealthPage() {
  const { me } = useSession();
  const t = useT();
  const report = useLoad(() => api<HealthReport>("GET", "/admin/health"), []);
  const data = report.data;
  return (
    <Layout title={t.nav.health}>
      <p>
        <button type="button" onClick={report.reload} disabled={report.loading}>
          {report.loading ? t.health.checking : t.health.checkAgain}
        </button>{" "}
        {data && (
          <span class="detail">
            {t.health.checked} <DateTime iso={data.checked_at} budgetZone={me.budget_timezone} />
          </span>
        )}
      </p>
      <ErrorNotice error={report.error} />
      {data && (
        <>
          <Services services={data.services} />
          <Broker broker={data.broker} />
          <Providers providers={data.providers} />
        </>
      )}
    </Layout>
  );
}

function Services({ services }: { services: ServiceHealth[] }) {
  const t = useT();
  const h = t.health;
  const down = services.filter((s) => !s.ready).length;
  return (
    <section aria-labelledby="services-heading">
      <h2 id="services-heading">{h.services}</h2>
      <p class={down === 0 ? "status status-active" : "status status-failed"} data-testid="services-summary">
        {down === 0 ? h.allReady(services.length) : h.notReady(down, services.length)}
      </p>
      <DataTable
        testId="health-services"
        columns={[h.service, h.ready, { label: h.answeredIn, num: true }, h.detail]}
        rows={services}
        row={(s) => (
          <tr key={`${s.service} ${s.url ?? ""}`} data-service={s.service}>
            <th scope="row">
              {s.service}
              {s.url && <div class="id">{s.url}</div>}
            </th>
            <td>{s.ready ? <span class="status status-active">{h.readyWord}</span> : <span class="status status-failed">{h.notReadyWord}</span>}</td>
            <td class="num">{s.ms === null ? "—" : h.ms(s.ms)}</td>
            {/* The services' own words: data, not the page's. */}
            <td translate={false}>
              {s.error && <div>{s.error}</div>}
              {Object.entries(s.checks).map(([name, outcome]) => (
                <div key={name} class="detail">
                  {name}: {outcome}
                </div>
              ))}
            </td>
          </tr>
        )}
      />
    </section>
  );
}

function Broker({ broker }: { broker: BrokerHealth }) {
  const t = useT();
  const h = t.health;
  const dead = broker.queues.filter((q) => q.role === "dead_letter" && (q.messages ?? 0) > 0);
  return (
    <section aria-labelledby="broker-heading">
      <h2 id="broker-heading">{h.broker}</h2>
      {broker.available ? (
        <p data-testid="broker-summary">
          <span class="status status-active">{h.reachable}</span> <span class="detail">{h.inMs(broker.ms ?? 0)}</span>
          {dead.length > 0 && <span class="status status-failed"> · {h.deadLetters(dead.length)} (npm run dlq -- show &lt;queue&gt;)</span>}
        </p>
      ) : (
        <p class="notice notice-error" data-testid="broker-summary">
          {h.unavailable} <span translate={false}>{broker.error}</span>
        </p>
      )}
      {broker.queues.length > 0 && (
        <DataTable
          testId="health-queues"
          columns={[h.queue, h.role, { label: h.readyMessages, num: true }, { label: h.consumers, num: true }]}
          rows={broker.queues}
          row={(q) => {
            const attention = q.role === "dead_letter" && (q.messages ?? 0) > 0;
            return (
              <tr key={q.name} data-queue={q.name} class={attention ? "attention" : undefined}>
                <th scope="row">{q.name}</th>
                <td>{h.roles[q.role] ?? q.role}</td>
                <td class="num">
                  {q.messages === null ? (
                    <span class="detail">{h.notDeclared}</span>
                  ) : attention ? (
                    <strong class="status status-failed">{q.messages}</strong>
                  ) : (
                    q.messages
                  )}
                </td>
                <td class="num">{q.consumers ?? "—"}</td>
              </tr>
            );
          }}
        />
      )}
    </section>
  );
}

function Providers({ providers }: { providers: ProvidersHealth }) {
  const t = useT();
  const h = t.health;
  return (
    <section aria-labelledby="providers-heading">
      <h2 id="providers-heading">{t.nav.providers}</h2>
      {!providers.available ? (
        <p class="notice notice-error" data-testid="providers-summary">
          {h.unavailable} <span translate={false}>{providers.error}</span>
        </p>
      ) : (
        <>
          <p class="detail">
            {h.limitsOn}{" "}
            <a href="/cabinet/operator/providers" onClick={followLink}>
              {t.nav.providers}
            </a>
            {h.limitsTail}
          </p>
          <DataTable
            testId="health-providers"
            columns={[t.models.columns.model, h.provider, h.state]}
            rows={providers.models.flatMap((m) => m.providers.map((p) => ({ m, p })))}
            row={({ m, p }) => (
              <tr key={`${m.model} ${p.id}`}>
                <th scope="row">
                  {m.model}
                  {!m.enabled && <div class="detail">{h.disabled}</div>}
                </th>
                <td>
                  {p.kind} <span class="detail">{p.host ?? h.builtIn}</span>
                </td>
                <td>
                  {p.state === null ? (
                    <span class="detail">{h.onlyProvider}</span>
                  ) : (
                    <span class={`status ${STATE[p.state].css}`}>{h.states[p.state] ?? p.state}</span>
                  )}
                  {p.consecutive_failures > 0 && <div class="detail">{h.failures(p.consecutive_failures)}</div>}
                </td>
              </tr>
            )}
          />
        </>
      )}
    </section>
  );
}
