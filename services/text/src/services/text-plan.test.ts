import type { CatalogModel } from "@meter/contracts";
import type { AppError } from "@meter/service-kit";
import { normalizeMessages, normalizeQuote, normalizeResponses, planText, type CatalogView } from "./text-plan";

const tariff = { input_microrub_per_1k_tokens: 1_000, output_microrub_per_1k_tokens: 3_000 };
const model = (over: Partial<CatalogModel> = {}): CatalogModel => ({
  id: "m",
  enabled: true,
  display_name: null,
  provider: { kind: "anthropic", base_url: "http://upstream", upstream_model: "claude-x", api_key_env: "X_API_KEY" },
  operations: { text: tariff },
  created_at: "",
  updated_at: "",
  ...over,
});
const catalogOf = (entry?: CatalogModel, ready = true): CatalogView => ({ ready, get: (id) => (entry && id === entry.id ? entry : undefined) });
const keys = { get: (n: string) => (n === "X_API_KEY" ? "sk" : undefined) };
const text = normalizeMessages({ model: "m", max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
const codeOf = (f: () => unknown) => {
  try {
    f();
    return "ok";
  } catch (e) {
    return (e as AppError).code;
  }
};

describe("planText", () => {
  it("prices the estimate (conservative input + max tokens) and fixes the upstream call", () => {
    const plan = planText("messages", catalogOf(model()), "m", text, keys);
    expect(plan.inputTokensEstimate).toBe(8 + 2 + 4);
    expect(plan.estimatedCost).toBe(Math.ceil((14 * 1_000 + 100 * 3_000) / 1000));
    expect(plan.request).toEqual({ model: "claude-x", messages: [{ role: "user", text: "hi" }], maxTokens: 100 });
    expect(plan.tariff).toEqual(tariff);
  });

  it("refuses before any hold: unknown model 404, disabled or untariffed 422, upstream key missing 503, catalog not loaded 503", () => {
    expect(codeOf(() => planText("messages", catalogOf(model()), "other", text, keys))).toBe("model_not_found");
    expect(codeOf(() => planText("messages", catalogOf(model({ enabled: false })), "m", text, keys))).toBe("cost_unknown");
    expect(codeOf(() => planText("messages", catalogOf(model({ operations: {} })), "m", text, keys))).toBe("cost_unknown");
    expect(codeOf(() => planText("messages", catalogOf(model()), "m", text, { get: () => undefined }))).toBe("model_unavailable");
    expect(codeOf(() => planText("messages", catalogOf(model(), false), "m", text, keys))).toBe("service_unavailable");
  });
});

describe("normalizing", () => {
  it("joins content blocks and keeps system and temperature", () => {
    const n = normalizeMessages({
      model: "m",
      max_tokens: 5,
      system: "be brief",
      temperature: 0.5,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "a" },
            { type: "text", text: "b" },
          ],
        },
      ],
    });
    expect(n).toEqual({ system: "be brief", messages: [{ role: "user", text: "a\nb" }], maxTokens: 5, temperature: 0.5 });
  });

  it("turns Responses instructions and system/developer items into the system prompt, with the default output budget", () => {
    const n = normalizeResponses(
      {
        model: "m",
        instructions: "rules",
        input: [
          { role: "developer", content: "dev" },
          { role: "user", content: "q" },
        ],
      },
      1024,
    );
    expect(n).toEqual({ system: "rules\n\ndev", messages: [{ role: "user", text: "q" }], maxTokens: 1024 });
  });

  it("refuses Responses input or quoted messages that are only instructions, with no turn to answer", () => {
    expect(() => normalizeResponses({ model: "m", input: [{ role: "developer", content: "dev" }] }, 1024)).toThrow(/input: at least one user or assistant/);
    expect(() => normalizeQuote({ model: "m", messages: [{ role: "system", content: "s" }] }, 1024)).toThrow(/messages: at least one user or assistant/);
  });
});
