import { NonRetryableError } from "./errors";

export interface RetryPolicy {
  /** Deliveries to the handler in all, the first included; after the last failure the message is dead-lettered. */
  maxAttempts: number;
  /** Delay before attempt n+1 is backoffMs[n-1]; the last entry repeats. */
  backoffMs: readonly number[];
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxAttempts: 5, backoffMs: [1_000, 5_000, 30_000, 120_000] };

export function resolveRetryPolicy(options: Partial<RetryPolicy> = {}): RetryPolicy {
  const policy = { ...DEFAULT_RETRY_POLICY, ...options };
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1) throw new TypeError("retry.maxAttempts must be an integer >= 1");
  if (policy.backoffMs.length === 0) throw new TypeError("retry.backoffMs must not be empty");
  for (const ms of policy.backoffMs) {
    if (!Number.isInteger(ms) || ms < 1) throw new TypeError("retry.backoffMs entries must be integers >= 1");
  }
  return policy;
}

/** The delays actually reachable with this many attempts: one delay queue is declared for each. */
export function reachableDelays(policy: RetryPolicy): number[] {
  const delays: number[] = [];
  for (let attempt = 1; attempt < policy.maxAttempts; attempt++) delays.push(backoffAfter(policy, attempt));
  return [...new Set(delays)];
}

export function backoffAfter(policy: RetryPolicy, failedAttempt: number): number {
  const index = Math.min(failedAttempt, policy.backoffMs.length) - 1;
  return policy.backoffMs[Math.max(index, 0)] ?? DEFAULT_RETRY_POLICY.backoffMs[0] ?? 1_000;
}

export type DeadLetterReason =
  | "unsigned"
  | "bad-signature"
  | "forbidden-producer"
  | "invalid-json"
  | "invalid-payload"
  | "unknown-routing-key"
  | "unexpected-routing-key"
  | "missing-message-id"
  | "non-retryable"
  | "max-attempts";

export type FailureDecision = { action: "retry"; delayMs: number } | { action: "dead-letter"; reason: DeadLetterReason };

export function decideOnFailure(policy: RetryPolicy, attempt: number, error: unknown): FailureDecision {
  if (error instanceof NonRetryableError) return { action: "dead-letter", reason: "non-retryable" };
  if (attempt >= policy.maxAttempts) return { action: "dead-letter", reason: "max-attempts" };
  return { action: "retry", delayMs: backoffAfter(policy, attempt) };
}
