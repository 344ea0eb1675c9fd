import type { AnalyticsFigures, AnalyticsGranularity, AnalyticsGrouping } from "@meter/contracts";
import type { RequestLogFilterSearch } from "./request-log.store";

/** Figures of one organization's log in [from, to), per hour (UTC) or per day of `timezone`. */
export interface AnalyticsSearch {
  organizationId: string;
  /** The window as instants (hours) and as budget days (days). */
  from: Date;
  to: Date;
  fromDay: string;
  toDay: string;
  granularity: AnalyticsGranularity;
  groupBy: AnalyticsGrouping;
  timezone: string;
  keyId?: string | undefined;
  modelPrefix?: string | undefined;
}

/** One bucket of one group: `bucket` an ISO instant (hours) or YYYY-MM-DD (days). */
export interface AnalyticsRow {
  bucket: string;
  keyId: string | null;
  keyName: string | null;
  model: string | null;
  figures: AnalyticsFigures;
}

/** A key's figures of one budget day. */
export interface KeyDay {
  keyId: string;
  day: string;
  requests: number;
  errors: number;
  cost: number;
}

export type LogTotals = Omit<AnalyticsFigures, "units">;

/**
 * The request log's figures over time: an hourly and a daily roll-up (per organization, key, model and
 * hour or budget day) kept up to date off the request path, read together with the few rows they have
 * not taken yet, so every answer is exact and reads hours or days, not entries (pg-request-analytics.store.ts).
 */
export interface RequestAnalyticsStore {
  /** Today's budget day (YYYY-MM-DD) in `timezone`, at `at` or the database's now(). */
  today(timezone: string, at: Date | null): Promise<string>;
  /** When budget day `fromDay` starts and the day after `toDay` starts, in `timezone`. */
  dayBounds(fromDay: string, toDay: string, timezone: string): Promise<{ from: Date; to: Date }>;
  /** Adds the entries written since the last pass to the hourly figures; how many entries it took. */
  rollUp(): Promise<number>;
  figures(q: AnalyticsSearch): Promise<AnalyticsRow[]>;
  /** What a filter of the log adds up to (every page of it). */
  totals(q: RequestLogFilterSearch): Promise<LogTotals>;
  /** Per key and budget day, from the day `fromDay` on (days with nothing are left out). */
  keyDays(keyIds: readonly string[], fromDay: string): Promise<KeyDay[]>;
  /** Each key's latest request in the log (a refusal's last repeat included). */
  lastUsed(keyIds: readonly string[]): Promise<Map<string, Date>>;
  /** Each key's median estimate over its last 20 requests that reserved. */
  typicalEstimates(keyIds: readonly string[]): Promise<Map<string, number>>;
  /** Deletes the hourly and daily figures before `cutoff`; how many rows. */
  purgeBefore(cutoff: Date): Promise<number>;
}
