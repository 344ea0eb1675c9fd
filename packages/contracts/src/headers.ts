/** Headers that carry the caller's identity between the gateway and the services. */
export const InternalHeaders = {
  identity: "x-meter-identity",
  timestamp: "x-meter-timestamp",
  signature: "x-meter-signature",
} as const;

export const RequestIdHeader = "x-request-id";
/** The same id under the Anthropic API's own name, which @anthropic-ai/sdk reports as `_request_id`. */
export const AnthropicRequestIdHeader = "request-id";
export const IdempotencyKeyHeader = "idempotency-key";
export const IdempotentReplayedHeader = "idempotent-replayed";
