import type { Pool } from "pg";

/** A provider's breaker as the database sees it now (its clock, not this process's). */
export interface ProviderHealthRow {
  provider: string;
  failures: number;
  /** Milliseconds it stays open from now; 0 when it is not open. */
  openForMs: number;
}

/**
 * The providers' circuit breakers (`provider_health`) and rpm/tpm counts (`provider_minute_calls`), shared by
 * every replica of a service through its own database; each service that routes upstream declares both
 * tables in its schema.
 */
export class ProviderHealthStore {
  constructor(private readonly pool: Pool) {}

  async all(): Promise<ProviderHealthRow[]> {
    const { rows } = await this.pool.query<ProviderHealthRow>(
      `SELECT provider, failures, GREATEST(0, ceil(extract(epoch FROM open_until - now()) * 1000))::float8 AS "openForMs"
       FROM provider_health`,
    );
    return rows.map((r) => ({ ...r, openForMs: Number(r.openForMs ?? 0) }));
  }

  /**
   * One more consecutive failure. At `threshold` failures it opens for `cooldownMs` (again after each
   * failed trial); a Retry-After keeps it open at least that long, whatever the count.
   */
  async failed(provider: string, threshold: number, cooldownMs: number, retryAfterMs: number | null): Promise<void> {
    await this.pool.query(
      `INSERT INTO provider_health AS h (provider, failures, open_until, updated_at)
       VALUES ($1, 1, CASE WHEN 1 >= $2 OR $4::float8 IS NOT NULL
                      THEN now() + GREATEST(CASE WHEN 1 >= $2 THEN $3::float8 ELSE 0 END, coalesce($4::float8, 0)) * interval '1 millisecond' END, now())
       ON CONFLICT (provider) DO UPDATE SET
         failures = h.failures + 1,
         open_until = CASE WHEN h.failures + 1 >= $2 OR $4::float8 IS NOT NULL
                      THEN GREATEST(h.open_until, now() + GREATEST(CASE WHEN h.failures + 1 >= $2 THEN $3::float8 ELSE 0 END, coalesce($4::float8, 0)) * interval '1 millisecond')
                      ELSE h.open_until END,
         updated_at = now()`,
      [provider, threshold, cooldownMs, retryAfterMs],
    );
  }

  async succeeded(provider: string): Promise<void> {
    await this.pool.query("UPDATE provider_health SET failures = 0, open_until = NULL, updated_at = now() WHERE provider = $1", [provider]);
  }

  /**
   * Counts one call and `tokens` in this minute unless that would pass `rpm` calls or `tpm` tokens;
   * the minute it was counted in, or undefined when a cap is reached.
   */
  async admit(provider: string, rpm: number | null, tpm: number | null, tokens: number): Promise<Date | undefined> {
    const { rows } = await this.pool.query<{ minute: Date }>(
      `INSERT INTO provider_minute_calls AS m (provider, minute, calls, tokens)
       SELECT $1, date_trunc('minute', now()), 1, $4::bigint WHERE $3::bigint IS NULL OR $4::bigint <= $3::bigint
       ON CONFLICT (provider, minute) DO UPDATE SET calls = m.calls + 1, tokens = m.tokens + $4::bigint
       WHERE ($2::int IS NULL OR m.calls < $2::int) AND ($3::bigint IS NULL OR m.tokens + $4::bigint <= $3::bigint)
       RETURNING m.minute`,
      [provider, rpm, tpm, tokens],
    );
    return rows[0]?.minute;
  }

  /** Corrects the tokens counted in `minute` by `delta` (an estimate put right once the usage is known). */
  async countTokens(provider: string, minute: Date, delta: number): Promise<void> {
    await this.pool.query("UPDATE provider_minute_calls SET tokens = GREATEST(0, tokens + $3::bigint) WHERE provider = $1 AND minute = $2", [
      provider,
      minute,
      delta,
    ]);
  }

  /** The calls and tokens counted in the current minute, per capped provider. */
  async thisMinute(): Promise<{ provider: string; calls: number; tokens: number }[]> {
    const { rows } = await this.pool.query<{ provider: string; calls: number; tokens: string }>(
      "SELECT provider, calls, tokens FROM provider_minute_calls WHERE minute = date_trunc('minute', now())",
    );
    return rows.map((r) => ({ provider: r.provider, calls: r.calls, tokens: Number(r.tokens) }));
  }

  /** Minutes past: only the current one counts. */
  async forgetPastMinutes(): Promise<void> {
    await this.pool.query("DELETE FROM provider_minute_calls WHERE minute < date_trunc('minute', now()) - interval '2 minutes'");
  }

  /**
   * The half-open trial: the one process whose update succeeds may call a provider whose cooldown ran
   * out; the others see it open for another cooldown, until the trial answers (succeeded) or fails.
   */
  async claimTrial(provider: string, threshold: number, cooldownMs: number): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE provider_health SET open_until = now() + $3::float8 * interval '1 millisecond', updated_at = now()
       WHERE provider = $1 AND failures >= $2 AND (open_until IS NULL OR open_until <= now())`,
      [provider, threshold, cooldownMs],
    );
    return rowCount === 1;
  }
}
