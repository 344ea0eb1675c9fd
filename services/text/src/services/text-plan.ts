import { providersOf, type ChatQuoteRequest, type CatalogModel, type MessagesRequest, type ResponsesRequest } from "@meter/contracts";
import type { TextEndpoint, TextPlan } from "../domain/text-record";
import type { ChatRequest, UpstreamKeys } from "@meter/upstreams";
import { TextErrors } from "../errors";
import { costOf, estimateInputTokens } from "./pricing";

type Content = string | { type: "text"; text: string }[];

function textOf(content: Content | { type: string; text: string }[]): string {
  return typeof content === "string" ? content : content.map((b) => b.text).join("\n");
}

export interface NormalizedText {
  system?: string;
  messages: ChatRequest["messages"];
  maxTokens: number;
  temperature?: number;
}

export function normalizeMessages(body: MessagesRequest): NormalizedText {
  return {
    ...(body.system !== undefined ? { system: textOf(body.system) } : {}),
    messages: body.messages.map((m) => ({ role: m.role, text: textOf(m.content) })),
    maxTokens: body.max_tokens,
    ...(body.temperature !== undefined ? { temperature: body.temperature } : {}),
  };
}

/** Responses input: `instructions` and system/developer items become the system text. */
export function normalizeResponses(body: ResponsesRequest, defaultMaxTokens: number): NormalizedText {
  const system: string[] = body.instructions !== undefined ? [body.instructions] : [];
  const messages: ChatRequest["messages"] = [];
  if (typeof body.input === "string") {
    messages.push({ role: "user", text: body.input });
  } else {
    for (const item of body.input) {
      const text = textOf(item.content);
      if (item.role === "system" || item.role === "developer") system.push(text);
      else messages.push({ role: item.role, text });
    }
  }
  if (messages.length === 0) throw TextErrors.noConversation("input");
  return {
    ...(system.length ? { system: system.join("\n\n") } : {}),
    messages,
    maxTokens: body.max_output_tokens ?? defaultMaxTokens,
    ...(body.temperature !== undefined ? { temperature: body.temperature } : {}),
  };
}

export function normalizeQuote(body: ChatQuoteRequest, defaultMaxTokens: number): NormalizedText {
  if (body.messages.every((m) => m.role === "system")) throw TextErrors.noConversation("messages");
  const system = [
    ...(body.system !== undefined ? [textOf(body.system)] : []),
    ...body.messages.filter((m) => m.role === "system").map((m) => textOf(m.content)),
  ];
  return {
    ...(system.length ? { system: system.join("\n\n") } : {}),
    messages: body.messages.flatMap((m) => (m.role === "system" ? [] : [{ role: m.role, text: textOf(m.content) }])),
    maxTokens: body.max_tokens ?? defaultMaxTokens,
  };
}

/** The catalog as pricing sees it: not ready means no model can be said to be missing yet. */
export interface CatalogView {
  readonly ready: boolean;
  get(id: string): CatalogModel | undefined;
}

/**
 * Prices a request against the catalog: catalog not loaded yet -> 503 (retry later, never a final
 * 404 for a model that exists); absent model -> 404; disabled, or no text tariff -> cost unknown (422);
 * an upstream whose key is not configured (or not one we may read) -> 503. All before any reservation.
 */
export function planText(endpoint: TextEndpoint, catalog: CatalogView, modelId: string, text: NormalizedText, keys: UpstreamKeys): TextPlan {
  if (!catalog.ready) throw TextErrors.catalogNotLoaded();
  const model = catalog.get(modelId);
  if (!model) throw TextErrors.modelNotFound(modelId);
  if (!model.enabled) throw TextErrors.costUnknown(modelId, "the model is disabled");
  const tariff = model.operations.text;
  if (!tariff) throw TextErrors.costUnknown(modelId, "the model has no text tariff");
  // One provider whose key this process has is enough: the others are passed over like refusals.
  const providers = providersOf(model);
  if (!providers.some((p) => !p.api_key_env || keys.get(p.api_key_env) !== undefined)) {
    throw TextErrors.modelUnavailable(`the upstream of "${modelId}" is not configured`);
  }
  const inputTokensEstimate = estimateInputTokens(text.system, text.messages);
  return {
    endpoint,
    model: modelId,
    provider: model.provider,
    ...(providers.length > 1 ? { providers } : {}),
    tariff,
    request: {
      model: model.provider.upstream_model ?? modelId,
      ...(text.system !== undefined ? { system: text.system } : {}),
      messages: text.messages,
      maxTokens: text.maxTokens,
      ...(text.temperature !== undefined ? { temperature: text.temperature } : {}),
    },
    inputTokensEstimate,
    estimatedCost: costOf(tariff, inputTokensEstimate, text.maxTokens),
  };
}
