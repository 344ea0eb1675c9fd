import { useEffect, useRef, useState } from "preact/hooks";
import type { CatalogModel, ModelActivity, Operations, TextTariff, UnitTariff } from "@meter/contracts";
import { api } from "../../api";
import { Amount } from "../../components/amount";
import { ACTIONS, DataTable } from "../../components/data-table";
import { Layout } from "../../components/layout";
import { SubmitOrCancel } from "../../components/form-buttons";
import { Done, ErrorNotice } from "../../components/notice";
import { TariffPrice } from "../../components/tariff-price";
import { SearchField } from "../../components/search-field";
import { useLoad } from "../../components/use-load";
import { exactRubleDigits, parseRubles } from "../../lib/money";
import { tariffsOf } from "../../lib/operations";
import { NewModelEditor } from "./new-model-editor";
import { changeEffect, type ChangeEffect, type OperationName, type PriceChange } from "../../lib/tariff-change";
import { useI18n, useT } from "../../i18n/locale";
import type { Messages } from "../../i18n/messages.en";

/** The model catalog: switch a model on or off and change its tariffs, seeing what the change does first. */
export function CatalogPage() {
  const t = useT();
  const c = t.catalog;
  const models = useLoad(() => api<{ data: CatalogModel[] }>("GET", "/admin/models"), []);
  const [search, setSearch] = useState("");
  const needle = search.trim().toLowerCase();
  // Matches the model's id or any provider's upstream model or host: a catalog of a few hundred is filtered here.
  const shown = (models.data?.data ?? []).filter(
    (m) =>
      !needle ||
      JSON.stringify([m.id, m.providers ?? m.provider ?? null])
        .toLowerCase()
        .includes(needle),
  );
  const activity = useLoad(() => api<{ data: ModelActivity[] }>("GET", "/admin/catalog/activity?days=30"), []);
  const [editing, setEditing] = useState<string>();
  const [saved, setSaved] = useState<string>();
  const [adding, setAdding] = useState(false);
  return (
    <Layout title={t.nav.catalog}>
      <p>{c.intro}</p>
      <ErrorNotice error={models.error ?? activity.error} />
      {saved && <Done>{saved}</Done>}
      {!adding && (
        <button type="button" onClick={() => (setAdding(true), setEditing(undefined), setSaved(undefined))}>
          {c.add}
        </button>
      )}
      {adding && (
        <NewModelEditor
          onClose={() => setAdding(false)}
          onSaved={(id) => {
            setSaved(c.saved(id));
            setAdding(false);
            models.reload();
          }}
        />
      )}
      {editing && models.data?.data.find((m) => m.id === editing) && (
        <ModelEditor
          key={editing}
          model={models.data.data.find((m) => m.id === editing)!}
          activity={(activity.data?.data ?? []).filter((a) => a.model === editing)}
          onClose={() => setEditing(undefined)}
          onSaved={(id) => {
            setSaved(c.saved(id));
            setEditing(undefined);
            models.reload();
            activity.reload();
          }}
        />
      )}
      {models.data && <SearchField label={c.find} value={search} onInput={setSearch} placeholder={c.findPlaceholder} />}
      {models.data && (
        <DataTable
          testId="catalog"
          columns={[c.columns.model, c.columns.providers, c.columns.status, c.columns.tariffs, c.columns.last30, ACTIONS]}
          rows={shown}
          empty={needle ? c.noMatch : c.none}
          row={(m) => (
            <tr key={m.id}>
              <th scope="row">
                {m.id}
                {m.display_name && m.display_name !== m.id && (
                  <div class="detail" translate={false}>
                    {m.display_name}
                  </div>
                )}
              </th>
              <td>
                {(m.providers ?? [m.provider]).map((p, i) => (
                  <div key={i}>
                    {p.kind}
                    {p.upstream_model && <span class="detail"> {p.upstream_model}</span>}
                  </div>
                ))}
              </td>
              <td>
                <span class={`status status-${m.enabled ? "active" : "revoked"}`}>{m.enabled ? c.enabled : c.disabled}</span>
              </td>
              <td>
                <Tariffs operations={m.operations} />
              </td>
              <td>
                <Activity rows={(activity.data?.data ?? []).filter((a) => a.model === m.id)} />
              </td>
              <td>
                <button type="button" onClick={() => (setEditing(m.id), setAdding(false), setSaved(undefined))} aria-expanded={editing === m.id}>
                  {c.edit(m.id)}
                </button>
              </td>
            </tr>
          )}
        />
      )}
    </Layout>
  );
}

function Tariffs({ operations }: { operations: Operations }) {
  const t = useT();
  return (
    <ul class="plain">
      {tariffsOf(operations).map(([op, tariff]) => (
        <li key={op}>
          <strong>{t.models.kinds[op] ?? op}</strong>: <TariffPrice operation={op} tariff={tariff} />
        </li>
      ))}
    </ul>
  );
}

function Activity({ rows }: { rows: ModelActivity[] }) {
  const { t, tag } = useI18n();
  const n = (x: number) => new Intl.NumberFormat(tag).format(x);
  if (rows.length === 0) return <span class="detail">{t.catalog.noRequests}</span>;
  return (
    <ul class="plain">
      {rows.map((a) => (
        <li key={a.operation}>
          {t.models.kinds[a.operation] ?? a.operation}: {t.catalog.activity(n(a.settled_requests))}, <Amount microrub={a.settled_microrub} />
          {a.active_holds > 0 && `; ${t.catalog.inProgress(n(a.active_holds))}`}
        </li>
      ))}
    </ul>
  );
}

/** Prices are edited in rubles (exact to the microruble); every other part of the entry is kept as it is. */
type Draft = { enabled: boolean; prices: Record<string, string> };

function draftOf(m: CatalogModel): Draft {
  const prices: Record<string, string> = {};
  for (const [op, t] of Object.entries(m.operations) as [OperationName, TextTariff | UnitTariff][]) {
    if (op === "text") {
      prices["text.input"] = exactRubleDigits((t as TextTariff).input_microrub_per_1k_tokens);
      prices["text.output"] = exactRubleDigits((t as TextTariff).output_microrub_per_1k_tokens);
    } else {
      prices[op] = exactRubleDigits((t as UnitTariff).price_per_unit_microrub);
    }
  }
  return { enabled: m.enabled, prices };
}

/** The draft as catalog operations, or the name of the first field that is not an amount. */
function operationsOf(m: CatalogModel, d: Draft, words: Messages): { operations: Operations } | { bad: string } {
  const operations: Record<string, unknown> = {};
  for (const [op, t] of Object.entries(m.operations) as [OperationName, TextTariff | UnitTariff][]) {
    if (op === "text") {
      const input = parseRubles(d.prices["text.input"] ?? "");
      const output = parseRubles(d.prices["text.output"] ?? "");
      if (input === undefined) return { bad: words.catalog.inputPrice };
      if (output === undefined) return { bad: words.catalog.outputPrice };
      operations.text = { input_microrub_per_1k_tokens: input, output_microrub_per_1k_tokens: output };
    } else {
      const price = parseRubles(d.prices[op] ?? "");
      if (price === undefined) return { bad: words.catalog.unitPrice(words.models.kinds[op] ?? op) };
      operations[op] = { ...(t as UnitTariff), price_per_unit_microrub: price };
    }
  }
  return { operations: operations as Operations };
}

function ModelEditor({
  model,
  activity,
  onClose,
  onSaved,
}: {
  model: CatalogModel;
  activity: ModelActivity[];
  onClose: () => void;
  onSaved: (id: string) => void;
}) {
  const t = useT();
  const c = t.catalog;
  const [draft, setDraft] = useState<Draft>(() => draftOf(model));
  const [review, setReview] = useState<{ effect: ChangeEffect; operations: Operations }>();
  const [error, setError] = useState<unknown>();
  const setPrice = (key: string, value: string) => setDraft((d) => ({ ...d, prices: { ...d.prices, [key]: value } }));
  const toReview = (e: Event) => {
    e.preventDefault();
    const parsed = operationsOf(model, draft, t);
    if ("bad" in parsed) return setError(new Error(c.badPrice(parsed.bad)));
    setError(undefined);
    setReview({ operations: parsed.operations, effect: changeEffect(model, { enabled: draft.enabled, operations: parsed.operations }, activity) });
  };
  const save = () => {
    if (!review) return;
    const body = {
      enabled: draft.enabled,
      // Every provider as it is: a tariff change must not drop the model's other providers.
      providers: model.providers ?? [model.provider],
      operations: review.operations,
      ...(model.display_name ? { display_name: model.display_name } : {}),
    };
    api("PUT", `/admin/models/${encodeURIComponent(model.id)}`, body).then(() => onSaved(model.id), setError);
  };
  // The editor opens above the list, where the operator is: focus moves to it, the page to its top.
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    heading.current?.focus();
    heading.current?.scrollIntoView({ block: "nearest" });
  }, []);
  return (
    <section class="card editor" aria-labelledby="editor-heading">
      <h2 id="editor-heading" tabIndex={-1} ref={heading}>
        {c.edit(model.id)}
      </h2>
      {!review ? (
        <form onSubmit={toReview} class="stack">
          <label class="check">
            <input type="checkbox" checked={draft.enabled} onChange={(e) => setDraft((d) => ({ ...d, enabled: e.currentTarget.checked }))} /> {c.enabledCheck}
          </label>
          {Object.keys(draft.prices).map((key) => (
            <label key={key}>
              {priceLabel(key, model, t)}, ₽
              <input inputMode="decimal" required value={draft.prices[key]} onInput={(e) => setPrice(key, e.currentTarget.value)} />
            </label>
          ))}
          <ErrorNotice error={error} />
          <SubmitOrCancel label={c.review} onCancel={onClose} />
        </form>
      ) : (
        <div class="stack">
          <EffectSummary effect={review.effect} />
          <ErrorNotice error={error} />
          <div class="buttons">
            <button type="button" class="primary" onClick={save}>
              {c.save}
            </button>
            <button type="button" onClick={() => setReview(undefined)}>
              {c.back}
            </button>
          </div>
        </div>
      )}
    </section>
  );
}

function priceLabel(key: string, model: CatalogModel, t: Messages): string {
  if (key === "text.input") return t.catalog.textInput;
  if (key === "text.output") return t.catalog.textOutput;
  const unit = (model.operations[key as OperationName] as UnitTariff | undefined)?.unit ?? "";
  const kind = t.models.kinds[key] ?? key.replace(/_/g, " ");
  return `${kind[0]!.toUpperCase()}${kind.slice(1)}, ${t.models.per(t.models.units[unit] ?? unit)}`;
}

/** A price of the change table in words: text's input or output per 1k tokens, or per the unit. */
function priceName(p: PriceChange, t: Messages): string {
  if (p.price === "input") return t.catalog.priceInput;
  if (p.price === "output") return t.catalog.priceOutput;
  return t.models.per(t.models.units[p.unit ?? ""] ?? p.unit ?? "");
}

function EffectSummary({ effect }: { effect: ChangeEffect }) {
  const { t, tag } = useI18n();
  const c = t.catalog;
  const kind = (op: string) => t.models.kinds[op] ?? op;
  const changed = effect.prices.filter((p) => p.before !== p.after);
  return (
    <div data-testid="change-effect">
      <h3>{c.effect}</h3>
      <ul>
        {effect.availability === "disabled" && (
          <li>
            <strong>{c.switchedOff}</strong>
            {c.switchedOffTail}
          </li>
        )}
        {effect.availability === "enabled" && (
          <li>
            <strong>{c.switchedOn}</strong>
            {c.switchedOnTail}
          </li>
        )}
        {changed.length === 0 && effect.availability === "unchanged" && <li>{c.nothing}</li>}
        {effect.operations.map(
          (o) =>
            o.activity &&
            o.activity.active_holds > 0 && (
              <li key={`holds-${o.operation}`}>
                {c.holdsKeep(new Intl.NumberFormat(tag).format(o.activity.active_holds), kind(o.operation))}
                <Amount microrub={o.activity.reserved_microrub} />
                {c.holdsKeepTail}
              </li>
            ),
        )}
      </ul>
      {changed.length > 0 && (
        <table>
          <caption>{c.prices}</caption>
          <thead>
            <tr>
              <th scope="col">{c.operation}</th>
              <th scope="col">{c.price}</th>
              <th scope="col" class="num">
                {c.now}
              </th>
              <th scope="col" class="num">
                {c.after}
              </th>
              <th scope="col" class="num">
                {c.change}
              </th>
            </tr>
          </thead>
          <tbody>
            {changed.map((p) => (
              <tr key={`${p.operation}-${p.price}`}>
                <td>{kind(p.operation)}</td>
                <td>{priceName(p, t)}</td>
                <td class="num">{p.before === undefined ? "—" : <Amount price microrub={p.before} />}</td>
                <td class="num">{p.after === undefined ? "—" : <Amount price microrub={p.after} />}</td>
                <td class="num">{percent(p.before, p.after, t, tag)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <table>
        <caption>{c.sampleCaption}</caption>
        <thead>
          <tr>
            <th scope="col">{c.operation}</th>
            <th scope="col">{c.request}</th>
            <th scope="col" class="num">
              {c.costsNow}
            </th>
            <th scope="col" class="num">
              {c.costsAfter}
            </th>
            <th scope="col" class="num">
              {c.charged30}
            </th>
            <th scope="col" class="num">
              {c.sameAfter}
            </th>
          </tr>
        </thead>
        <tbody>
          {effect.operations.map((o) => (
            <tr key={o.operation}>
              <td>{kind(o.operation)}</td>
              <td>{o.sampleUnit === undefined ? c.sampleText : c.sampleUnit(t.models.units[o.sampleUnit] ?? o.sampleUnit)}</td>
              <td class="num">{o.sampleBefore === undefined ? "—" : <Amount microrub={o.sampleBefore} />}</td>
              <td class="num">{o.sampleAfter === undefined ? "—" : <Amount microrub={o.sampleAfter} />}</td>
              <td class="num">{o.activity ? <Amount microrub={o.activity.settled_microrub} /> : c.noneCharged}</td>
              <td class="num">
                {o.projected ? (
                  o.projected.low === o.projected.high ? (
                    <Amount microrub={o.projected.low} />
                  ) : (
                    <>
                      <Amount microrub={o.projected.low} /> {c.range} <Amount microrub={o.projected.high} />
                    </>
                  )
                ) : (
                  "—"
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function percent(before: number | undefined, after: number | undefined, t: Messages, tag: string): string {
  if (before === undefined || after === undefined) return before === undefined ? t.catalog.isNew : t.catalog.removed;
  const format = (x: number) => new Intl.NumberFormat(tag, { style: "percent", maximumFractionDigits: 1, signDisplay: "exceptZero" }).format(x);
  if (before === 0) return after === 0 ? format(0) : t.catalog.fromFree;
  return format((after - before) / before);
}
