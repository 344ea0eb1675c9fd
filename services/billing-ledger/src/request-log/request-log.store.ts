import type { RequestLogEntry } from "@meter/contracts";

/** Where the list starts: after this entry, in newest-first order. */
export interface RequestLogPosition {
  createdAt: Date;
  holdId: string;
}

/** One key's entries (the API), or an organization's (the cabinet, the operator), narrowed by the filters. */
export type RequestLogOwner = { keyId: string } | { organizationId: string; keyId?: string | undefined };

export interface RequestLogSearch {
  owner: RequestLogOwner;
  /** Inclusive lower bound of created_at. */
  from?: Date | undefined;
  /** Exclusive upper bound of created_at. */
  to?: Date | undefined;
  model?: string | undefined;
  /** An HTTP status, or whether the request was charged. */
  status?: number | "succeeded" | "failed" | undefined;
  after?: RequestLogPosition | undefined;
  limit: number;
}

/**
 * The request log's one port: PostgreSQL on this machine (pg-request-log.store.ts), a column store such
 * as ClickHouse at scale. Entries reach it with their hold commands (the PostgreSQL store writes them in
 * the hold batch's own statement, HoldOpsRepository); this port answers the reads and the retention.
 */
export interface RequestLogStore {
  /** Newest first: created_at, then hold id, both descending. */
  search(q: RequestLogSearch): Promise<RequestLogEntry[]>;
  /** Deletes up to `batch` entries created before `cutoff`; how many it deleted. */
  purgeBefore(cutoff: Date, batch: number): Promise<number>;
}
