import { useState } from "preact/hooks";
import type { Notice, WebhookEndpoint, WebhookEventType } from "@meter/contracts";
import { api } from "../api";
import { Amount } from "../components/amount";
import { CheckList } from "../components/check-list";
import { ConfirmButton } from "../components/confirm-button";
import { ACTIONS, DataTable } from "../components/data-table";
import { DeliveryLog } from "../components/delivery-log";
import { DateTime } from "../components/date-time";
import { Layout } from "../components/layout";
import { Done, ErrorNotice } from "../components/notice";
import { ShownOnce } from "../components/secret";
import { useLoad } from "../components/use-load";
import { useT } from "../i18n/locale";
import { useMember } from "../session";

/** The contracts' WEBHOOK_EVENT_TYPES (only types are imported into the pages: the bundle stays free of zod). */
const EVENT_TYPES: WebhookEventType[] = ["budget.threshold", "balance.low", "key.revoked", "key.expired"];

/**
 * The organization's webhook endpoints (register, send a test event, rotate the secret, delete, each
 * one's delivery log) and its notices: the same events, as they happened (docs/api.md, "Webhooks").
 */
export function WebhooksPage() {
  const me = useMember();
  const t = useT();
  const w8 = t.webhooks;
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
    <Layout title={w8.title}>
      <RegisterForm
        onCreated={(w) => {
          setSecret({ url: w.url, secret: w.secret ?? "", why: w8.registered });
          endpoints.reload();
        }}
      />
      {secret && (
        <ShownOnce
          headingId="secret-heading"
          title={w8.secretOf(secret.url)}
          secretId="webhook-secret"
          secret={secret.secret}
          copyLabel={w8.copySecret}
          onSaved={() => setSecret(undefined)}
        >
          <p>
            {w8.secretText(secret.why)} <code>webhook-signature</code> {w8.secretTail}
          </p>
        </ShownOnce>
      )}
      <section aria-labelledby="endpoints-heading">
        <h2 id="endpoints-heading">{w8.endpoints}</h2>
        <ErrorNotice error={endpoints.error ?? error} />
        {done && <Done>{done}</Done>}
        {endpoints.data && (
          <DataTable
            columns={["URL", w8.events, w8.registeredColumn, ACTIONS]}
            rows={endpoints.data.data}
            empty={w8.noEndpoints}
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
                        setDone(w8.testSent(w.url));
                        setLogOf(w.id);
                      })
                    }
                  >
                    {w8.sendTest}
                  </button>
                  <button type="button" aria-expanded={logOf === w.id} onClick={() => setLogOf(logOf === w.id ? undefined : w.id)}>
                    {w8.deliveryLog}
                  </button>
                  <ConfirmButton
                    label={w8.rotate}
                    name={w8.rotateName(w.url)}
                    confirmLabel={w8.rotateConfirm}
                    onConfirm={() =>
                      act(async () => {
                        const rotated = await api<WebhookEndpoint>("POST", `/webhooks/${w.id}/rotate-secret`);
                        setSecret({ url: w.url, secret: rotated.secret ?? "", why: w8.rotated });
                      })
                    }
                  />
                  <ConfirmButton
                    label={t.files.delete}
                    name={t.files.deleteName(w.url)}
                    confirmLabel={t.files.deleteConfirm}
                    onConfirm={() =>
                      act(async () => {
                        await api("DELETE", `/webhooks/${w.id}`);
                        setDone(w8.deletedText(w.url));
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
        {logOf && <DeliveryLog budgetZone={me.budget_timezone} base={`/webhooks/${logOf}`} url={endpoints.data?.data.find((w) => w.id === logOf)?.url ?? ""} />}
      </section>
      <section aria-labelledby="notices-heading">
        <h2 id="notices-heading">{w8.notices}</h2>
        <p class="aside">{w8.noticesAside}</p>
        <ErrorNotice error={notices.error} />
        {notices.data?.data.length === 0 && <p>{w8.noNotices}</p>}
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
          {t.common.refresh}
        </button>
      </section>
    </Layout>
  );
}

/** A notice in a member's words. */
function NoticeText({ notice }: { notice: Notice }) {
  const t = useT();
  const w8 = t.webhooks;
  const d = notice.data as Record<string, string | number | null | undefined>;
  const key = d.key_name ? `“${d.key_name}”` : w8.aKey;
  switch (notice.type) {
    case "budget.threshold":
      return (
        <span>
          {w8.budgetNotice(key, String(d.percent), String(d.budget_day))} <Amount microrub={Number(d.spent_microrub)} /> {w8.of}{" "}
          <Amount microrub={Number(d.daily_budget_microrub)} />.
        </span>
      );
    case "balance.low":
      return (
        <span>
          {w8.balanceFell} <Amount microrub={Number(d.available_microrub)} />, {w8.under} <Amount microrub={Number(d.low_balance_microrub)} />.
        </span>
      );
    case "key.revoked":
      return <span>{w8.keyRevoked(key)}</span>;
    case "key.expired":
      return <span>{w8.keyExpired(key)}</span>;
    default:
      return <span>{w8.eventLabels[notice.type]}.</span>;
  }
}

function RegisterForm({ onCreated }: { onCreated: (w: WebhookEndpoint) => void }) {
  const t = useT();
  const w8 = t.webhooks;
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<WebhookEventType[]>(["budget.threshold", "balance.low"]);
  const [error, setError] = useState<unknown>();
  const submit = (e: Event) => {
    e.preventDefault();
    if (events.length === 0) return setError(new Error(w8.noEvent));
    setError(undefined);
    api<WebhookEndpoint>("POST", "/webhooks", { url, events }).then((w) => {
      setUrl("");
      onCreated(w);
    }, setError);
  };
  return (
    <section aria-labelledby="register-heading">
      <h2 id="register-heading">{w8.register}</h2>
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
        <CheckList
          legend={w8.eventsLegend}
          name="event"
          options={EVENT_TYPES.map((value) => ({ value, what: w8.eventLabels[value] ?? value }))}
          chosen={events}
          onChange={setEvents}
        />
        <ErrorNotice error={error} />
        <button type="submit" class="primary">
          {w8.registerButton}
        </button>
      </form>
    </section>
  );
}
