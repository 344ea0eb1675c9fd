import {
  ANALYTICS_MAX_DAYS,
  ANALYTICS_MAX_HOURLY_DAYS,
  spanDays,
  type AnalyticsFigures,
  type AnalyticsGroup,
  type AnalyticsQuery,
  type AnalyticsReport,
  type KeyActivity,
  type NextRequest,
  type SessionIdentity,
} from "@meter/contracts";
import { BillingErrors } from "../errors";
import type { AccountService } from "../accounts/account.service";
import type { MemberScope } from "../accounts/member-scope";
import { daysBetween, lastDays } from "../accounts/money-report.service";
import type { AnalyticsRow, RequestAnalyticsStore } from "./request-analytics.store";

/** Days of a key's activity: today and the six budget days before it. */
const ACTIVITY_DAYS = 7;
const HOUR_MS = 3_600_000;

const ZERO: AnalyticsFigures = { requests: 0, succeeded: 0, failed: 0, refused: 0, input_tokens: 0, output_tokens: 0, units: 0, cost_microrub: 0 };

function add(a: AnalyticsFigures, b: AnalyticsFigures): AnalyticsFigures {
  return {
    requests: a.requests + b.requests,
    succeeded: a.succeeded + b.succeeded,
    failed: a.failed + b.failed,
    refused: a.refused + b.refused,
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    units: a.units + b.units,
    cost_microrub: a.cost_microrub + b.cost_microrub,
  };
}

/**
 * Usage over time from the request log (docs/api.md "Analytics"): an organization's figures per hour
 * or budget day, grouped by key or model; a key's recent activity; and whether a key's next typical
 * request still fits what its budget and its organization's balance leave (the honest budget bar).
 */
export class UsageAnalyticsService {
  constructor(
    private readonly store: RequestAnalyticsStore,
    private readonly scope: MemberScope,
    private readonly accounts: AccountService,
    private readonly timezone: string,
    /** Tests move the clock as they do for hold operations; otherwise the database's now(). */
    private readonly clock?: () => Date,
  ) {}

  async forMember(identity: SessionIdentity, q: AnalyticsQuery): Promise<AnalyticsReport> {
    return this.report((await this.scope.of(identity)).organizationId, q);
  }

  async forOrganization(organizationId: string, q: AnalyticsQuery): Promise<AnalyticsReport> {
    await this.accounts.getOrganization(organizationId);
    return this.report(organizationId, q);
  }

  private async report(organizationId: string, q: AnalyticsQuery): Promise<AnalyticsReport> {
    const today = await this.store.today(this.timezone, this.clock?.() ?? null);
    const to = q.to ?? (q.from && q.from > today ? q.from : today);
    const from = q.from ?? (q.granularity === "hour" ? to : lastDays(to, 30)[0]!);
    const maxDays = q.granularity === "hour" ? ANALYTICS_MAX_HOURLY_DAYS : ANALYTICS_MAX_DAYS;
    if (spanDays(from, to) > maxDays) throw BillingErrors.badAnalyticsRange(maxDays);
    const bounds = await this.store.dayBounds(from, to, this.timezone);
    const rows = await this.store.figures({
      organizationId,
      from: bounds.from,
      to: bounds.to,
      fromDay: from,
      toDay: to,
      granularity: q.granularity,
      groupBy: q.group_by,
      timezone: this.timezone,
      keyId: q.key_id,
      modelPrefix: q.model_prefix,
    });
    const buckets = q.granularity === "day" ? daysBetween(from, to) : hoursBetween(bounds.from, bounds.to);
    const groups = groupsOf(rows, buckets);
    return {
      object: "analytics",
      organization_id: organizationId,
      timezone: this.timezone,
      granularity: q.granularity,
      group_by: q.group_by,
      from,
      to,
      buckets,
      groups,
      totals: groups.reduce((sum, g) => add(sum, g.totals), ZERO),
    };
  }

  /** Each key's last use, requests today and over 7 budget days, and its daily trend. */
  async activityOf(keyIds: readonly string[]): Promise<Map<string, KeyActivity>> {
    const today = await this.store.today(this.timezone, this.clock?.() ?? null);
    const days = lastDays(today, ACTIVITY_DAYS);
    const [perDay, lastUsed] = await Promise.all([this.store.keyDays(keyIds, days[0]!), this.store.lastUsed(keyIds)]);
    return new Map(
      keyIds.map((id) => {
        const mine = perDay.filter((d) => d.keyId === id);
        const daily = days.map((day) => {
          const d = mine.find((m) => m.day === day);
          return { day, requests: d?.requests ?? 0, errors: d?.errors ?? 0, cost_microrub: d?.cost ?? 0 };
        });
        return [
          id,
          {
            last_used_at: lastUsed.get(id)?.toISOString() ?? null,
            requests_today: daily.at(-1)!.requests,
            requests_7d: daily.reduce((n, d) => n + d.requests, 0),
            errors_7d: daily.reduce((n, d) => n + d.errors, 0),
            daily,
          },
        ];
      }),
    );
  }

  /**
   * Whether each key's next typical request fits: the median estimate of its last requests against
   * the room left, the lesser of its budget's remainder and its organization's available balance
   * (a hold needs both). Absent for a key that never reserved.
   */
  async nextRequests(keys: readonly { id: string; remaining_microrub: number }[], organizationId: string): Promise<Map<string, NextRequest>> {
    if (keys.length === 0) return new Map();
    const [estimates, balance] = await Promise.all([this.store.typicalEstimates(keys.map((k) => k.id)), this.accounts.balance(organizationId)]);
    const result = new Map<string, NextRequest>();
    for (const k of keys) {
      const estimate = estimates.get(k.id);
      if (estimate === undefined) continue;
      const room = Math.max(0, Math.min(k.remaining_microrub, balance.available_microrub));
      result.set(k.id, { estimated_cost_microrub: estimate, room_microrub: room, fits: estimate <= room });
    }
    return result;
  }
}

/** Every hour from `from` to `to` as the figures name them (UTC, ISO 8601), `from` taken to its hour. */
function hoursBetween(from: Date, to: Date): string[] {
  const hours: string[] = [];
  for (let t = Math.floor(from.getTime() / HOUR_MS) * HOUR_MS; t < to.getTime(); t += HOUR_MS) hours.push(new Date(t).toISOString().replace(".000Z", "Z"));
  return hours;
}

/** The rows as dense series, one point per bucket; the biggest spender first, then the busiest. */
function groupsOf(rows: AnalyticsRow[], buckets: string[]): AnalyticsGroup[] {
  const index = new Map(buckets.map((b, i) => [b, i]));
  const groups = new Map<string, AnalyticsGroup>();
  for (const r of rows) {
    const id = `${r.keyId ?? ""}|${r.model ?? ""}`;
    let g = groups.get(id);
    if (!g) {
      g = { key: r.keyId ? { id: r.keyId, name: r.keyName } : null, model: r.model, points: buckets.map(() => ZERO), totals: ZERO };
      groups.set(id, g);
    }
    const i = index.get(r.bucket);
    if (i !== undefined) g.points[i] = add(g.points[i]!, r.figures);
    g.totals = add(g.totals, r.figures);
  }
  if (groups.size === 0) return [{ key: null, model: null, points: buckets.map(() => ZERO), totals: ZERO }];
  return [...groups.values()].sort((a, b) => b.totals.cost_microrub - a.totals.cost_microrub || b.totals.requests - a.totals.requests);
}
