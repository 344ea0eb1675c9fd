import type { MessagesRequest, Provider, ResponsesRequest, TextTariff, ChatQuoteRequest } from "@meter/contracts";
import type { CatalogModel } from "@meter/contracts";
import type { ProviderRequest } from "../providers/provider";
import { TextErrors } from "../errors";
import { costOf, estimateInputTokens } from "./pricing";

export type TextEndpoint = "messages" | "responses";

/**
 * Everything needed to run a request to the end, fixed when it is accepted and stored with it: the
 * upstream call, the provider, and the tariff it was priced at (a hold keeps the price it was placed
 * at, even if the catalog changes while it runs).
 */
export interface TextPlan {
  endpoint: TextEndpoint;
  model: string;
  provider: Provider;
  tariff: TextTariff;
  request: ProviderRequest;
  inputTokensEstimate: number;
  estimatedCost: number;
}

type Content = string | { type: "text"; text: string }[];

function textOf(content: Content | { type: string; text: string }[]): string {
  return typeof content === "string" ? content : content.map((b) => b.text).join("\n");
}

export interface NormalizedText {
  system?: string;
  messages: ProviderRequest["messages"];
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
  const messages: ProviderRequest["messages"] = [];
  if (typeof body.input === "string") {
    messages.push({ role: "user", text: body.input });
  } else {
    for (const item of body.input) {
      const text = textOf(item.content);
      if (item.role === "system" || item.role === "developer") system.push(text);
      else messages.push({ role: item.role, text });
    }
  }
  return {
    ...(system.length ? { system: system.join("\n\n") } : {}),
    messages,
    maxTokens: body.max_output_tokens ?? defaultMaxTokens,
    ...(body.temperature !== undefined ? { temperature: body.temperature } : {}),
  };
}

export function normalizeQuote(body: ChatQuoteRequest, defaultMaxTokens: number): NormalizedText {
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

/**
 * Prices a request against the catalog: absent model -> 404; disabled, or no text tariff -> cost
 * unknown (422); an upstream whose key is not configured -> 503. All before any reservation.
 */
export function planText(
  endpoint: TextEndpoint,
  model: CatalogModel | undefined,
  modelId: string,
  text: NormalizedText,
  env: NodeJS.ProcessEnv,
): TextPlan {
  if (!model) throw TextErrors.modelNotFound(modelId);
  if (!model.enabled) throw TextErrors.costUnknown(modelId, "the model is disabled");
  const tariff = model.operations.text;
  if (!tariff) throw TextErrors.costUnknown(modelId, "the model has no text tariff");
  const keyEnv = model.provider.api_key_env;
  if (keyEnv && !env[keyEnv]) throw TextErrors.modelUnavailable(`the upstream of "${modelId}" is not configured`);
  const inputTokensEstimate = estimateInputTokens(text.system, text.messages);
  return {
    endpoint,
    model: modelId,
    provider: model.provider,
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
