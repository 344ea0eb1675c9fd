/**
 * Headers of a signed internal call (see service-kit's internal/request-signature.ts): the caller's
 * identity, and the signature over it, the target, the body's digest, a timestamp and a nonce.
 */
export const InternalHeaders = {
  identity: "x-meter-identity",
  timestamp: "x-meter-timestamp",
  nonce: "x-meter-nonce",
  contentSha256: "x-meter-content-sha256",
  keyId: "x-meter-key-id",
  signature: "x-meter-signature",
} as const;

/** The body digest of a streamed body, which the signer cannot know before sending it. */
export const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";

export const RequestIdHeader = "x-request-id";
/** The same id under the Anthropic API's own name, which @anthropic-ai/sdk reports as `_request_id`. */
export const AnthropicRequestIdHeader = "request-id";
export const IdempotencyKeyHeader = "idempotency-key";
export const IdempotentReplayedHeader = "idempotent-replayed";
