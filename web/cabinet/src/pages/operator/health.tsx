import type { BrokerHealth, HealthReport, ProvidersHealth, QueueHealth, ServiceHealth } from "@meter/contracts";
import { api } from "../../api";
import { DataTable } from "../../components/data-table";
import { DateTime } from "../../components/date-time";
import { Layout } from "../../components/layout";
import { ErrorNotice } from "../../components/notice";
import { useLoad } from "../../components/use-load";
import { followLink } from "../../router";
import { useSession } from "../../session";
import { STATE } from "./providers";

const ROLE: Record<QueueHealth["role"], string> = { work: "work", dead_letter: "dead letters", unrouted: "unrouted" };

/**
 * The system at a glance for the operator: each service's readiness (every text replica), the broker's
 * queues with their dead letters, and the upstream providers' breakers. The gateway asks them all at
 * once when the page loads or is refreshed; a part it could not read says why.
 */
export function HealthPage() {
  const { me } = useSession();
  const report = useLoad(() => api<HealthReport>("GET", "/admin/health"), []);
  const data = report.data;
  return (
    <Layout title="System health">
      <p>
        <button type="button" onClick={report.reload} disabled={report.loading}>
          {report.loading ? "Checking…" : "Check again"}
        </button>{" "}
        {data && (
          <span class="detail">
            Checked <DateTime iso={data.checked_at} budgetZone={me.budget_timezone} />
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
  const down = services.filter((s) => !s.ready).length;
  return (
    <section aria-labelledby="services-heading">
      <h2 id="services-heading">Services</h2>
      <p class={down === 0 ? "status status-active" : "status status-failed"} data-testid="services-summary">
        {down === 0 ? `All ${services.length} ready` : `${down} of ${services.length} not ready`}
      </p>
      <DataTable
        testId="health-services"
        columns={["Service", "Ready", { label: "Answered in", num: true }, "Detail"]}
        rows={services}
        row={(s) => (
          <tr key={`${s.service} ${s.url ?? ""}`} data-service={s.service}>
            <th scope="row">
              {s.service}
              {s.url && <div class="id">{s.url}</div>}
            </th>
            <td>{s.ready ? <span class="status status-active">ready</span> : <span class="status status-failed">not ready</span>}</td>
            <td class="num">{s.ms === null ? "—" : `${s.ms} ms`}</td>
            <td>
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
  const dead = broker.queues.filter((q) => q.role === "dead_letter" && (q.messages ?? 0) > 0);
  return (
    <section aria-labelledby="broker-heading">
      <h2 id="broker-heading">Broker and queues</h2>
      {broker.available ? (
        <p data-testid="broker-summary">
          <span class="status status-active">reachable</span> <span class="detail">in {broker.ms} ms</span>
          {dead.length > 0 && (
            <span class="status status-failed">
              {" "}
              · {dead.length} dead-letter {dead.length === 1 ? "queue holds" : "queues hold"} messages (npm run dlq -- show &lt;queue&gt;)
            </span>
          )}
        </p>
      ) : (
        <p class="notice notice-error" data-testid="broker-summary">
          Unavailable: {broker.error}
        </p>
      )}
      {broker.queues.length > 0 && (
        <DataTable
          testId="health-queues"
          columns={["Queue", "Role", { label: "Ready messages", num: true }, { label: "Consumers", num: true }]}
          rows={broker.queues}
          row={(q) => {
            const attention = q.role === "dead_letter" && (q.messages ?? 0) > 0;
            return (
              <tr key={q.name} data-queue={q.name} class={attention ? "attention" : undefined}>
                <th scope="row">{q.name}</th>
                <td>{ROLE[q.role]}</td>
                <td class="num">
                  {q.messages === null ? (
                    <span class="detail">not declared</span>
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
  return (
    <section aria-labelledby="providers-heading">
      <h2 id="providers-heading">Upstream providers</h2>
      {!providers.available ? (
        <p class="notice notice-error" data-testid="providers-summary">
          Unavailable: {providers.error}
        </p>
      ) : (
        <>
          <p class="detail">
            Limits and request look-ups are on the{" "}
            <a href="/cabinet/operator/providers" onClick={followLink}>
              Upstream providers
            </a>{" "}
            page.
          </p>
          <DataTable
            testId="health-providers"
            columns={["Model", "Provider", "State"]}
            rows={providers.models.flatMap((m) => m.providers.map((p) => ({ m, p })))}
            row={({ m, p }) => (
              <tr key={`${m.model} ${p.id}`}>
                <th scope="row">
                  {m.model}
                  {!m.enabled && <div class="detail">disabled</div>}
                </th>
                <td>
                  {p.kind} <span class="detail">{p.host ?? "built in"}</span>
                </td>
                <td>
                  {p.state === null ? (
                    <span class="detail">only provider, no breaker</span>
                  ) : (
                    <span class={`status ${STATE[p.state].css}`}>{STATE[p.state].label}</span>
                  )}
                  {p.consecutive_failures > 0 && <div class="detail">{p.consecutive_failures} failures in a row</div>}
                </td>
              </tr>
            )}
          />
        </>
      )}
    </section>
  );
}
