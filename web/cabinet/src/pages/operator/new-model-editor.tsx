import { useEffect, useRef, useState } from "preact/hooks";
import type { ProviderKind } from "@meter/contracts";
import { api } from "../../api";
import { SubmitOrCancel } from "../../components/form-buttons";
import { ErrorNotice } from "../../components/notice";
import { parseRubles } from "../../lib/money";
import { useT } from "../../i18n/locale";

const KINDS: ProviderKind[] = ["openai-chat", "anthropic", "openai-responses", "local"];
type ProviderDraft = { kind: ProviderKind; base_url: string; upstream_model: string; api_key_env: string; priority: string; weight: string };
const EMPTY: ProviderDraft = { kind: "openai-chat", base_url: "", upstream_model: "", api_key_env: "", priority: "0", weight: "1" };

/**
 * A new text model with its providers (docs/api.md, "Several providers per model"): tried by priority,
 * lower first, spread by weight among equals. Opens where the operator is, focus on its heading; the
 * server's validation answers anything the form lets through.
 */
export function NewModelEditor({ onClose, onSaved }: { onClose: () => void; onSaved: (id: string) => void }) {
  const c = useT().catalog;
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    heading.current?.focus();
    heading.current?.scrollIntoView({ block: "nearest" });
  }, []);
  const [id, setId] = useState("");
  const [displayName, setDisplayName] = useState("");
  const [enabled, setEnabled] = useState(true);
  const [input, setInput] = useState("");
  const [output, setOutput] = useState("");
  const [providers, setProviders] = useState<ProviderDraft[]>([{ ...EMPTY }]);
  const [error, setError] = useState<unknown>();
  const setProvider = (i: number, patch: Partial<ProviderDraft>) => setProviders((ps) => ps.map((p, j) => (j === i ? { ...p, ...patch } : p)));
  const submit = (e: Event) => {
    e.preventDefault();
    const inputPrice = parseRubles(input);
    const outputPrice = parseRubles(output);
    if (inputPrice === undefined || outputPrice === undefined) return setError(new Error(c.badPrices));
    const body = {
      enabled,
      ...(displayName.trim() ? { display_name: displayName.trim() } : {}),
      providers: providers.map((p) => ({
        kind: p.kind,
        ...(p.base_url.trim() ? { base_url: p.base_url.trim() } : {}),
        ...(p.upstream_model.trim() ? { upstream_model: p.upstream_model.trim() } : {}),
        ...(p.api_key_env.trim() ? { api_key_env: p.api_key_env.trim() } : {}),
        priority: Number(p.priority || 0),
        weight: Number(p.weight || 1),
      })),
      operations: { text: { input_microrub_per_1k_tokens: inputPrice, output_microrub_per_1k_tokens: outputPrice } },
    };
    setError(undefined);
    api("PUT", `/admin/models/${encodeURIComponent(id.trim())}`, body).then(() => onSaved(id.trim()), setError);
  };
  return (
    <section class="card editor" aria-labelledby="new-model-heading">
      <h2 id="new-model-heading" tabIndex={-1} ref={heading}>
        {c.newModel}
      </h2>
      <form onSubmit={submit} class="stack">
        <label>
          {c.modelId}
          <input required maxLength={200} value={id} onInput={(e) => setId(e.currentTarget.value)} />
        </label>
        <label>
          {c.displayName}
          <input maxLength={200} value={displayName} onInput={(e) => setDisplayName(e.currentTarget.value)} />
        </label>
        <label class="check">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> {c.enabledShort}
        </label>
        <label>
          {c.textInput}, ₽
          <input inputMode="decimal" required value={input} onInput={(e) => setInput(e.currentTarget.value)} />
        </label>
        <label>
          {c.textOutput}, ₽
          <input inputMode="decimal" required value={output} onInput={(e) => setOutput(e.currentTarget.value)} />
        </label>
        {providers.map((p, i) => (
          <fieldset key={i} data-testid="provider">
            <legend>{c.provider(i + 1)}</legend>
            <div class="stack">
              <label>
                {c.kind}
                <select value={p.kind} onChange={(e) => setProvider(i, { kind: e.currentTarget.value as ProviderKind })}>
                  {KINDS.map((k) => (
                    <option key={k} value={k}>
                      {k}
                    </option>
                  ))}
                </select>
              </label>
              <label>
                {c.baseUrl}
                <input
                  type="url"
                  placeholder="https://api.example.com/v1"
                  value={p.base_url}
                  onInput={(e) => setProvider(i, { base_url: e.currentTarget.value })}
                />
              </label>
              <label>
                {c.upstreamModel}
                <input value={p.upstream_model} onInput={(e) => setProvider(i, { upstream_model: e.currentTarget.value })} />
              </label>
              <label>
                {c.apiKeyEnv}
                <input placeholder="OPENAI_API_KEY" value={p.api_key_env} onInput={(e) => setProvider(i, { api_key_env: e.currentTarget.value })} />
              </label>
              <label>
                {c.priority}
                <input inputMode="numeric" value={p.priority} onInput={(e) => setProvider(i, { priority: e.currentTarget.value })} />
              </label>
              <label>
                {c.weight}
                <input inputMode="numeric" value={p.weight} onInput={(e) => setProvider(i, { weight: e.currentTarget.value })} />
              </label>
              {providers.length > 1 && (
                <button type="button" class="quiet" onClick={() => setProviders((ps) => ps.filter((_, j) => j !== i))}>
                  {c.removeProvider(i + 1)}
                </button>
              )}
            </div>
          </fieldset>
        ))}
        <button type="button" onClick={() => setProviders((ps) => [...ps, { ...EMPTY, priority: String(ps.length) }])}>
          {c.addProvider}
        </button>
        <ErrorNotice error={error} />
        <SubmitOrCancel label={c.saveModel} onCancel={onClose} />
      </form>
    </section>
  );
}
