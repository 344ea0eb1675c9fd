/**
 * The one catalog of public error codes (docs/api.md "Authentication, errors, headers"), with the HTTP status each maps to and
 * the Anthropic-style `error.type` so official SDKs classify them.
 */
export const ErrorCatalog = {
  invalid_json: 400,
  invalid_request: 400,
  unknown_field: 400,
  unsupported_parameter: 400,
  idempotency_key_required: 400,
  invalid_upload_headers: 400,
  /** A webhook URL that is malformed, not https in production, carries credentials, or does not resolve. */
  invalid_webhook_url: 400,
  authentication_required: 401,
  invalid_api_key: 401,
  /** The cabinet's sign-in: email or password wrong (which one is not said). */
  invalid_credentials: 401,
  insufficient_balance: 402,
  insufficient_scope: 403,
  /** A browser `Origin` the MCP endpoint does not trust (MCP_ALLOWED_ORIGINS). */
  origin_not_allowed: 403,
  invalid_upload_link: 403,
  upload_link_expired: 403,
  /** A state-changing cabinet call without the session's CSRF token. */
  csrf_token_invalid: 403,
  not_found: 404,
  model_not_found: 404,
  file_not_found: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  /** A request body that did not arrive in time, or too slowly (docs/api.md, Limits and overload). */
  request_timeout: 408,
  file_not_verified: 409,
  upload_already_completed: 409,
  hold_already_resolved: 409,
  /** A hold operation on a hold or allowance another service placed, or a placement in another service's name. */
  foreign_hold: 409,
  conflict: 409,
  /** A cabinet invitation link already used, expired or replaced by a newer one. */
  invitation_invalid: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_mismatch: 422,
  cost_unknown: 422,
  max_cost_exceeded: 422,
  file_quota_exceeded: 422,
  settle_exceeds_hold: 422,
  /** A webhook URL whose host is (or resolves to) a private, loopback, link-local or other non-public address. */
  webhook_address_not_allowed: 422,
  daily_budget_exceeded: 429,
  rate_limited: 429,
  internal_error: 500,
  upstream_error: 502,
  media_disabled: 503,
  model_unavailable: 503,
  service_unavailable: 503,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ErrorCatalog;

export function statusOf(code: ErrorCode): number {
  return ErrorCatalog[code];
}

/** Anthropic SDKs read `error.type`; OpenAI SDKs read `error.code`. We send both. */
export function errorTypeOf(status: number): string {
  switch (status) {
    case 400:
    case 405:
    case 406:
    case 409:
    case 415:
    case 422:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 402:
      return "billing_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 408:
      return "timeout_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
      return "overloaded_error";
    default:
      return "api_error";
  }
}

export interface ErrorBody {
  type: "error";
  error: { code: string; message: string; type: string; request_id?: string };
}
