import { useState } from "preact/hooks";
import type { Notice, WebhookDelivery, WebhookEndpoint, WebhookEventType } from "@meter/contracts";
import { api } from "../api";
import { Amount } from "../components/amount";
import { CheckList } from "../components/check-list";
import { ConfirmButton } from "../components/confirm-button";
import { ACTIONS, DataTable } from "../components/data-table";
import { DateTime } from "../components/date-time";
import { Layout } from "../components/layout";
import { Done, ErrorNotice } from "../components/notice";
import { ShownOnce } from "../components/secret";
import { useLoad } from "../components/use-load";
import { useMember } from "../session";

/** The contracts' WEBHOOK_EVENT_TYPES (only types are imported into the pages: the bundle stays free of zod). */
const EVENT_TYPES: WebhookEventType[] = ["budget.threshold", "balance.low", "key.revoked", "key.expired"];
const EVENT_LABELS: Record<WebhookEventType | "test", string> = {
  "budget.threshold": "a key crossed one of its budget alert percents",
  "balance.low": "the available balance fell under the low-balance line",
  "key.revoked": "a key was revoked",
  "key.expired": "a key expired",
  test: "a test event",
};
const EVENT_OPTIONS = EVENT_TYPES.map((value) => ({ value, what: EVENT_LABELS[value] }));

/**
 * The organization's webhook endpoints (register, send a test event, rotate the secret, delete, each
 * one's delivery log) and its notices: the same events, as they happened (docs/api.md, "Webhooks").
 */
export function WebhooksPage() {
  const me = useMember();
  const endpoints = useLoad(() => api<{ data: WebhookEndpoint[] }>("GET", "/webhooks"), [me.organization_id]);
  const notices = useLoad(() => api<{ data: Notice[] }>("GET", "/notices?limit=20"), [me.organization_id]);
  const [secret, setSecret] = useState<{ url: string; secret: string; why: string } | undefined>();
  const [done, setDone] = useState<string | undefined>();
  const [error, setError] = useState<unknown>();
  const [logOf, setLogOf] = useState<string | undefined>();
  const act = async (work: () => Promise<void>) => {
    setError(undefined);
    setDone(undefined);
    try {
      await work();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <Layout title="Webhooks and notices">
      <RegisterForm
        onCreated={(w) => {
          setSecret({ url: w.url, secret: w.secret ?? "", why: "registered" });
          endpoints.reload();
        }}
      />
      {secret && (
        <ShownOnce
          headingId="secret-heading"
          title={`Signing secret of ${secret.url}`}
          secretId="webhook-secret"
          secret={secret.secret}
          copyLabel="Copy secret"
          onSaved={() => setSecret(undefined)}
        >
          <p>
            The endpoint is {secret.why}. Copy its secret now: it is shown only this once. Your receiver checks each event's
            <code>webhook-signature</code> with it (Standard Webhooks).
          </p>
        </ShownOnce>
      )}
      <section aria-labelledby="endpoints-heading">
        <h2 id="endpoints-heading">Endpoints</h2>
        <ErrorNotice error={endpoints.error ?? error} />
        {done && <Done>{done}</Done>}
        {endpoints.data && (
          <DataTable
            scroll
            columns={["URL", "Events", "Registered", ACTIONS]}
            rows={endpoints.data.data}
            empty="No endpoints yet."
            row={(w) => (
              <tr key={w.id} data-webhook-id={w.id}>
                <th scope="row" class="wrap">
                  <code>{w.url}</code>
                </th>
                <td>{w.events.join(", ")}</td>
                <td>
                  <DateTime iso={w.created_at} budgetZone={me.budget_timezone} />
                </td>
                <td class="actions">
                  <button
                    type="button"
                    onClick={() =>
                      void act(async () => {
                        await api("POST", `/webhooks/${w.id}/test`);
                        setDone(`A test event is on its way to ${w.url}.`);
                        setLogOf(w.id);
                      })
                    }
                  >
                    Send a test event
                  </button>
                  <button type="button" aria-expanded={logOf === w.id} onClick={() => setLogOf(logOf === w.id ? undefined : w.id)}>
                    Delivery log
                  </button>
                  <ConfirmButton
                    label="Rotate secret"
                    name={`Rotate the secret of ${w.url}`}
                    confirmLabel="Yes, replace it"
                    onConfirm={() =>
                      act(async () => {
                        const rotated = await api<WebhookEndpoint>("POST", `/webhooks/${w.id}/rotate-secret`);
                        setSecret({ url: w.url, secret: rotated.secret ?? "", why: "signed with a new secret from now on" });
                      })
                    }
                  />
                  <ConfirmButton
                    label="Delete"
                    name={`Delete ${w.url}`}
                    confirmLabel="Yes, delete it"
                    onConfirm={() =>
                      act(async () => {
                        await api("DELETE", `/webhooks/${w.id}`);
                        setDone(`${w.url} is deleted.`);
                        if (logOf === w.id) setLogOf(undefined);
                        endpoints.reload();
                      })
                    }
                  />
                </td>
              </tr>
            )}
          />
        )}
        {logOf && <DeliveryLog webhookId={logOf} url={endpoints.data?.data.find((w) => w.id === logOf)?.url ?? ""} />}
      </section>
      <section aria-labelledby="notices-heading">
        <h2 id="notices-heading">Notices</h2>
        <p class="aside">The organization's events, whether or not an endpoint listens to them.</p>
        <ErrorNotice error={notices.error} />
        {notices.data?.data.length === 0 && <p>No notices yet.</p>}
        {notices.data && notices.data.data.length > 0 && (
          <ul class="plain notices" data-testid="notices">
            {notices.data.data.map((n) => (
              <li key={n.id}>
                <DateTime iso={n.created_at} budgetZone={me.budget_timezone} /> <span class="tag">{n.type}</span> <NoticeText notice={n} />
              </li>
            ))}
          </ul>
        )}
        <button type="button" class="quiet" onClick={() => notices.reload()}>
          Refresh
        </button>
      </section>
    </Layout>
  );
}

/** A notice in a member's words. */
function NoticeText({ notice }: { notice: Notice }) {
  const d = notice.data as Record<string, string | number | null | undefined>;
  const key = d.key_name ? `“${d.key_name}”` : "a key";
  switch (notice.type) {
    case "budget.threshold":
      return (
        <span>
          Key {key} spent {d.percent}% of its daily budget on {d.budget_day}: <Amount microrub={Number(d.spent_microrub)} /> of{" "}
          <Amount microrub={Number(d.daily_budget_microrub)} />.
        </span>
      );
    case "balance.low":
      return (
        <span>
          The available balance fell to <Amount microrub={Number(d.available_microrub)} />, under <Amount microrub={Number(d.low_balance_microrub)} />.
        </span>
      );
    case "key.revoked":
      return <span>Key {key} was revoked.</span>;
    case "key.expired":
      return <span>Key {key} expired.</span>;
    default:
      return <span>{EVENT_LABELS[notice.type]}.</span>;
  }
}

function DeliveryLog({ webhookId, url }: { webhookId: string; url: string }) {
  const me = useMember();
  const log = useLoad(() => api<{ data: WebhookDelivery[] }>("GET", `/webhooks/${webhookId}/deliveries?limit=50`), [webhookId]);
  return (
    <section aria-labelledby="log-heading" data-testid="delivery-log">
      <h3 id="log-heading">Deliveries to {url}</h3>
      <ErrorNotice error={log.error} />
      {log.data && (
        <DataTable
          scroll
          columns={["Event", "Status", "Attempts", "Last answer", "Created"]}
          rows={log.data.data}
          empty="Nothing sent yet."
          row={(d) => (
            <tr key={d.id}>
              <th scope="row">
                <span class="tag">{d.event_type}</span> <code class="id">{d.event_id}</code>
              </th>
              <td>
                <span class={`status status-${d.status}`}>{d.status}</span>
                {d.next_attempt_at && (
                  <>
                    {" "}
                    (next try <DateTime iso={d.next_attempt_at} budgetZone={me.budget_timezone} />)
                  </>
                )}
              </td>
              <td class="num">{d.attempts}</td>
              <td>
                {d.last_response_status ?? "no answer"}
                {d.last_error ? `: ${d.last_error}` : ""}
              </td>
              <td>
                <DateTime iso={d.created_at} budgetZone={me.budget_timezone} />
              </td>
            </tr>
          )}
        />
      )}
      <button type="button" class="quiet" onClick={() => log.reload()}>
        Refresh the log
      </button>
    </section>
  );
}

function RegisterForm({ onCreated }: { onCreated: (w: WebhookEndpoint) => void }) {
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<WebhookEventType[]>(["budget.threshold", "balance.low"]);
  const [error, setError] = useState<unknown>();
  const submit = (e: Event) => {
    e.preventDefault();
    if (events.length === 0) return setError(new Error("choose at least one event"));
    setError(undefined);
    api<WebhookEndpoint>("POST", "/webhooks", { url, events }).then((w) => {
      setUrl("");
      onCreated(w);
    }, setError);
  };
  return (
    <section aria-labelledby="register-heading">
      <h2 id="register-heading">Register an endpoint</h2>
      <form onSubmit={submit} class="stack">
        <label>
          URL
          <input
            name="url"
            type="url"
            required
            maxLength={2048}
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
            placeholder="https://example.com/meter-events"
          />
        </label>
        <CheckList legend="Events to send there" name="event" options={EVENT_OPTIONS} chosen={events} onChange={setEvents} />
        <ErrorNotice error={error} />
        <button type="submit" class="primary">
          Register
        </button>
      </form>
    </section>
  );
}
