import { z } from "zod";
import { CommonConfig, env, parseConfig, serviceEnv } from "@meter/config";
import { DEFAULT_UPSTREAM_KEY_ENV_PATTERN } from "@meter/contracts";

export const BillingConfig = CommonConfig.extend({
  BILLING_LEDGER_PORT: serviceEnv.port("billing-ledger"),
  BILLING_LEDGER_DATABASE_URL: serviceEnv.databaseUrl("billing-ledger"),
  RABBITMQ_URL: env.secretUrl("amqp://guest:guest@127.0.0.1:5672"),
  /** The owners of holds, asked by the hold audit (by a hold's `source`). */
  TEXT_URL: serviceEnv.url("text"),
  MEDIA_JOBS_URL: serviceEnv.url("media-jobs"),
  /** The day a daily budget counts from starts at 00:00 in this zone. */
  BUDGET_TIMEZONE: env.string("UTC"),
  /**
   * billing-ledger's own Ed25519 key for signing what it grants (every hold placement and allowance
   * grant it answers), `<kid>.<base64url PKCS#8 DER>`: a secret of billing-ledger alone, kept across
   * restores of its database (docs/api.md, "Backups and the books cross-check").
   */
  GRANT_SIGNING_KEY: z.string().min(40, "must be <kid>.<base64url PKCS#8 DER> (generate with `pnpm internal-keys`)"),
  /** The public keys grants are verified with, `<kid>.<base64url SPKI DER>, ...`: the signing key's, and earlier ones while records they signed are kept. */
  GRANT_PUBLIC_KEYS: z.string().min(40, "must list <kid>.<base64url SPKI DER> entries (generate with `pnpm internal-keys`)"),
  /** Holds nobody resolved are expired (and reported) only after this long. */
  HOLD_EXPIRY_HOURS: env.int(72, { min: 1 }),
  HOLD_SWEEP_INTERVAL_MS: env.int(60_000, { min: 100 }),
  /** How often keys past their expires_at are closed (their allowances called back); verification refuses them at once anyway. */
  KEY_EXPIRY_SWEEP_INTERVAL_MS: env.int(1_000, { min: 100 }),
  /** How often request log entries past their 90 days are deleted. */
  REQUEST_LOG_RETENTION_INTERVAL_MS: env.int(3_600_000, { min: 1_000 }),
  /** How often the request log's new entries are added to its hourly figures (analytics read the rest live). */
  REQUEST_LOG_ROLLUP_INTERVAL_MS: env.int(5_000, { min: 100 }),
  /** A hold active longer than this is asked about at its owner. */
  HOLD_AUDIT_AFTER_MS: env.int(300_000, { min: 1_000 }),
  HOLD_AUDIT_INTERVAL_MS: env.int(60_000, { min: 100 }),
  /** The books cross-check's pace: every owner's final records against billing's holds, repaired where billing lost them. */
  BOOKS_CROSS_CHECK_INTERVAL_MS: env.int(600_000, { min: 1_000 }),
  /** The longest a batch of hold operations waits for one row lock; then it goes on op by op, and a lone op is tried once more, then refused. */
  HOLD_LOCK_TIMEOUT_MS: env.int(1_000, { min: 10 }),
  /**
   * How a hold batch is committed (docs/scale.md): "batch", one transaction for the whole batch, split
   * by organization inside it (one PostgreSQL: the fastest); "organization", one transaction per
   * organization of the batch, as a database distributed by organization (Citus) needs.
   */
  HOLD_BATCH_TRANSACTIONS: z.enum(["batch", "organization"]).default("batch"),
  /**
   * Allowances (docs/api.md): one grant takes at most this fraction of what the key's daily budget and
   * its organization's available balance have left, so near a limit requests take per-request holds.
   */
  ALLOWANCE_MAX_SHARE: z.preprocess((v) => (v === "" ? undefined : v), z.coerce.number().gt(0).max(1).default(0.25)),
  /** What a refusal caused by money parked in allowances tells the caller to wait: the holders' idle time and a margin. */
  ALLOWANCE_RETRY_AFTER_S: env.int(5, { min: 1 }),
  /** The environment variable names a catalog entry may name as its upstream's API key. */
  UPSTREAM_KEY_ENV_PATTERN: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z
      .string()
      .default(DEFAULT_UPSTREAM_KEY_ENV_PATTERN)
      .transform((source, ctx) => {
        try {
          return new RegExp(source);
        } catch (e) {
          ctx.addIssue({ code: "custom", message: `not a regular expression: ${(e as Error).message}` });
          return z.NEVER;
        }
      }),
  ),
  DATABASE_POOL_SIZE: env.int(10, { min: 1 }),
  /** A web cabinet session ends this long after sign-in (or at once on sign-out). */
  CABINET_SESSION_TTL_HOURS: env.int(12, { min: 1, max: 24 * 30 }),
  /** How long an invitation's one-time sign-in link works. */
  CABINET_INVITATION_TTL_HOURS: env.int(24, { min: 1, max: 24 * 14 }),
  /**
   * Failed sign-ins of one account from one client address, and from one address over all accounts,
   * before each next attempt from that address waits 1 s, 2 s, 4 s, ... up to the longest delay; a
   * failure counts for the window. The account is never locked for other addresses.
   */
  CABINET_SIGN_IN_FREE_FAILURES: env.int(3, { min: 0 }),
  CABINET_SIGN_IN_FREE_FAILURES_PER_ADDRESS: env.int(20, { min: 0 }),
  CABINET_SIGN_IN_MAX_DELAY_S: env.int(300, { min: 1 }),
  CABINET_SIGN_IN_WINDOW_S: env.int(900, { min: 1 }),
  /**
   * Webhook URLs may reach private, loopback, link-local and other non-public addresses (local
   * development and tests only): otherwise such an address is refused at registration and at every
   * connection, after DNS (docs/api.md, "Webhooks").
   */
  WEBHOOK_ALLOW_PRIVATE_ADDRESSES: env.bool(false),
  /** One delivery attempt's limit, connection to the end of the (small) answer. */
  WEBHOOK_TIMEOUT_MS: env.int(5_000, { min: 100, max: 30_000 }),
  /** The first retry's wait, doubling each attempt up to the longest wait, for the retry window; then the delivery fails. */
  WEBHOOK_RETRY_BASE_MS: env.int(5_000, { min: 10 }),
  WEBHOOK_RETRY_MAX_DELAY_MS: env.int(3_600_000, { min: 10 }),
  WEBHOOK_RETRY_WINDOW_HOURS: env.int(24, { min: 1, max: 24 * 7 }),
  /** How often the webhook worker looks for deliveries that are due. */
  WEBHOOK_POLL_INTERVAL_MS: env.int(1_000, { min: 10 }),
});
export type BillingConfig = z.infer<typeof BillingConfig>;

export function loadConfig(source: NodeJS.ProcessEnv = process.env): BillingConfig {
  return parseConfig(BillingConfig, source);
}
