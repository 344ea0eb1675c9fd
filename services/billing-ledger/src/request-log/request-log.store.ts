import type { RefusalRecord, RequestLogEntry } from "@meter/contracts";

/** Where the list starts: after this entry, in newest-first order. */
export interface RequestLogPosition {
  createdAt: Date;
  holdId: string;
}

/** One key's entries (the API), or an organization's (the cabinet, the operator), narrowed by the filters. */
export type RequestLogOwner = { keyId: string } | { organizationId: string; keyId?: string | undefined };

/** What a page, its CSV and its totals select. */
export interface RequestLogFilterSearch {
  owner: RequestLogOwner;
  /** Inclusive lower bound of created_at. */
  from?: Date | undefined;
  /** Exclusive upper bound of created_at. */
  to?: Date | undefined;
  model?: string | undefined;
  /** Models whose id starts with this. */
  modelPrefix?: string | undefined;
  /** An HTTP status, or the outcome: charged, released, refused. */
  status?: number | "succeeded" | "failed" | "refused" | undefined;
}

export interface RequestLogSearch extends RequestLogFilterSearch {
  after?: RequestLogPosition | undefined;
  limit: number;
}

/**
 * The request log's entries: PostgreSQL on this machine (pg-request-log.store.ts), a column store such
 * as ClickHouse at scale. Paid entries reach it with their hold commands (the PostgreSQL store writes
 * them in the hold batch's own statement, HoldOpsRepository); this port takes the gateway's refusals
 * and answers the reads and the retention. Figures over time are RequestAnalyticsStore's.
 */
export interface RequestLogStore {
  /** Newest first: created_at, then hold id, both descending. */
  search(q: RequestLogSearch): Promise<RequestLogEntry[]>;
  /** Collapses each refusal into its key's entry of the hour (bounded per key); how many it took. */
  recordRefusals(refusals: readonly RefusalRecord[]): Promise<number>;
  /** Deletes up to `batch` entries created before `cutoff`; how many it deleted. */
  purgeBefore(cutoff: Date, batch: number): Promise<number>;
}
