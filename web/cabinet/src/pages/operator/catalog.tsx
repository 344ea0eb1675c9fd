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
import { changeEffect, type ChangeEffect, type OperationName } from "../../lib/tariff-change";

/** The model catalog: switch a model on or off and change its tariffs, seeing what the change does first. */
export function CatalogPage() {
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
    <Layout title="Model catalog">
      <p>A change applies to requests accepted after it, within seconds; a request already holding money keeps the price it was held at.</p>
      <ErrorNotice error={models.error ?? activity.error} />
      {saved && <Done>{saved}</Done>}
      {!adding && (
        <button type="button" onClick={() => (setAdding(true), setEditing(undefined), setSaved(undefined))}>
          Add a model
        </button>
      )}
      {adding && (
        <NewModelEditor
          onClose={() => setAdding(false)}
          onSaved={(id) => {
            setSaved(`Saved ${id}: it applies to new requests within seconds.`);
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
            setSaved(`Saved ${id}: it applies to new requests within seconds.`);
            setEditing(undefined);
            models.reload();
            activity.reload();
          }}
        />
      )}
      {models.data && <SearchField label="Find models" value={search} onInput={setSearch} placeholder="id, upstream model or host" />}
      {models.data && (
        <DataTable
          testId="catalog"
          columns={["Model", "Providers", "Status", "Tariffs", "Last 30 days", ACTIONS]}
          rows={shown}
          empty={needle ? "No model matches that." : "No models yet."}
          row={(m) => (
            <tr key={m.id}>
              <th scope="row">
                {m.id}
                {m.display_name && m.display_name !== m.id && <div class="detail">{m.display_name}</div>}
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
                <span class={`status status-${m.enabled ? "active" : "revoked"}`}>{m.enabled ? "enabled" : "disabled"}</span>
              </td>
              <td>
                <Tariffs operations={m.operations} />
              </td>
              <td>
                <Activity rows={(activity.data?.data ?? []).filter((a) => a.model === m.id)} />
              </td>
              <td>
                <button type="button" onClick={() => (setEditing(m.id), setAdding(false), setSaved(undefined))} aria-expanded={editing === m.id}>
                  Edit {m.id}
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
  return (
    <ul class="plain">
      {tariffsOf(operations).map(([op, t]) => (
        <li key={op}>
          <strong>{op}</strong>: <TariffPrice operation={op} tariff={t} />
        </li>
      ))}
    </ul>
  );
}

function Activity({ rows }: { rows: ModelActivity[] }) {
  if (rows.length === 0) return <span class="detail">no requests</span>;
  return (
    <ul class="plain">
      {rows.map((a) => (
        <li key={a.operation}>
          {a.operation}: {a.settled_requests} charged, <Amount microrub={a.settled_microrub} />
          {a.active_holds > 0 && `; ${a.active_holds} in progress`}
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

/** The draft as catalog operations, or the first field that is not an amount. */
function operationsOf(m: CatalogModel, d: Draft): { operations: Operations } | { bad: string } {
  const operations: Record<string, unknown> = {};
  for (const [op, t] of Object.entries(m.operations) as [OperationName, TextTariff | UnitTariff][]) {
    if (op === "text") {
      const input = parseRubles(d.prices["text.input"] ?? "");
      const output = parseRubles(d.prices["text.output"] ?? "");
      if (input === undefined) return { bad: "text input price" };
      if (output === undefined) return { bad: "text output price" };
      operations.text = { input_microrub_per_1k_tokens: input, output_microrub_per_1k_tokens: output };
    } else {
      const price = parseRubles(d.prices[op] ?? "");
      if (price === undefined) return { bad: `${op} price` };
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
  const [draft, setDraft] = useState<Draft>(() => draftOf(model));
  const [review, setReview] = useState<{ effect: ChangeEffect; operations: Operations }>();
  const [error, setError] = useState<unknown>();
  const setPrice = (key: string, value: string) => setDraft((d) => ({ ...d, prices: { ...d.prices, [key]: value } }));
  const toReview = (e: Event) => {
    e.preventDefault();
    const parsed = operationsOf(model, draft);
    if ("bad" in parsed) return setError(new Error(`the ${parsed.bad} must be an amount in rubles with at most six decimals`));
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
        Edit {model.id}
      </h2>
      {!review ? (
        <form onSubmit={toReview} class="stack">
          <label class="check">
            <input type="checkbox" checked={draft.enabled} onChange={(e) => setDraft((d) => ({ ...d, enabled: e.currentTarget.checked }))} /> Enabled: listed in
            /v1/models and accepting requests
          </label>
          {Object.keys(draft.prices).map((key) => (
            <label key={key}>
              {priceLabel(key, model)}, ₽
              <input inputMode="decimal" required value={draft.prices[key]} onInput={(e) => setPrice(key, e.currentTarget.value)} />
            </label>
          ))}
          <ErrorNotice error={error} />
          <SubmitOrCancel label="Review the change" onCancel={onClose} />
        </form>
      ) : (
        <div class="stack">
          <EffectSummary effect={review.effect} />
          <ErrorNotice error={error} />
          <div class="buttons">
            <button type="button" class="primary" onClick={save}>
              Save the change
            </button>
            <button type="button" onClick={() => setReview(undefined)}>
              Back to editing
            </button>
          </div>
        </div>
      )}
    </section>
  );
}

function priceLabel(key: string, model: CatalogModel): string {
  if (key === "text.input") return "Text input, per 1k tokens";
  if (key === "text.output") return "Text output, per 1k tokens";
  const t = model.operations[key as OperationName] as UnitTariff | undefined;
  return `${key.replace(/_/g, " ")}, per ${t?.unit ?? "unit"}`;
}

function EffectSummary({ effect }: { effect: ChangeEffect }) {
  const changed = effect.prices.filter((p) => p.before !== p.after);
  return (
    <div data-testid="change-effect">
      <h3>What this change does</h3>
      <ul>
        {effect.availability === "disabled" && (
          <li>
            <strong>The model is switched off:</strong> it leaves /v1/models and new requests for it are refused (422 cost_unknown) before anything is reserved.
          </li>
        )}
        {effect.availability === "enabled" && (
          <li>
            <strong>The model is switched on:</strong> it is listed in /v1/models and accepts requests at the prices below.
          </li>
        )}
        {changed.length === 0 && effect.availability === "unchanged" && <li>Nothing changes.</li>}
        {effect.operations.map(
          (o) =>
            o.activity &&
            o.activity.active_holds > 0 && (
              <li key={`holds-${o.operation}`}>
                {o.activity.active_holds} {o.operation} request(s) in progress keep the price they hold (<Amount microrub={o.activity.reserved_microrub} />{" "}
                reserved).
              </li>
            ),
        )}
      </ul>
      {changed.length > 0 && (
        <table>
          <caption>Prices</caption>
          <thead>
            <tr>
              <th scope="col">Operation</th>
              <th scope="col">Price</th>
              <th scope="col" class="num">
                Now
              </th>
              <th scope="col" class="num">
                After
              </th>
              <th scope="col" class="num">
                Change
              </th>
            </tr>
          </thead>
          <tbody>
            {changed.map((p) => (
              <tr key={`${p.operation}-${p.price}`}>
                <td>{p.operation}</td>
                <td>{p.price}</td>
                <td class="num">{p.before === undefined ? "—" : <Amount price microrub={p.before} />}</td>
                <td class="num">{p.after === undefined ? "—" : <Amount price microrub={p.after} />}</td>
                <td class="num">{percent(p.before, p.after)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <table>
        <caption>A typical request, and the last 30 days' traffic at the new prices</caption>
        <thead>
          <tr>
            <th scope="col">Operation</th>
            <th scope="col">Request</th>
            <th scope="col" class="num">
              Costs now
            </th>
            <th scope="col" class="num">
              Costs after
            </th>
            <th scope="col" class="num">
              30 days charged
            </th>
            <th scope="col" class="num">
              Same traffic after
            </th>
          </tr>
        </thead>
        <tbody>
          {effect.operations.map((o) => (
            <tr key={o.operation}>
              <td>{o.operation}</td>
              <td>{o.sample}</td>
              <td class="num">{o.sampleBefore === undefined ? "—" : <Amount microrub={o.sampleBefore} />}</td>
              <td class="num">{o.sampleAfter === undefined ? "—" : <Amount microrub={o.sampleAfter} />}</td>
              <td class="num">{o.activity ? <Amount microrub={o.activity.settled_microrub} /> : "none"}</td>
              <td class="num">
                {o.projected ? (
                  o.projected.low === o.projected.high ? (
                    <Amount microrub={o.projected.low} />
                  ) : (
                    <>
                      <Amount microrub={o.projected.low} /> to <Amount microrub={o.projected.high} />
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

function percent(before: number | undefined, after: number | undefined): string {
  if (before === undefined || after === undefined) return before === undefined ? "new" : "removed";
  if (before === 0) return after === 0 ? "0%" : "from free";
  const p = ((after - before) / before) * 100;
  return `${p > 0 ? "+" : ""}${p.toFixed(p % 1 === 0 ? 0 : 1)}%`;
}
