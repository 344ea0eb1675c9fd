import type {
  CabinetRequestLogFilter,
  CabinetRequestLogQuery,
  KeyIdentity,
  RecordRefusalsRequest,
  RequestLogEntry,
  RequestLogList,
  RequestLogQuery,
  RequestLogTotals,
  SessionIdentity,
} from "@meter/contracts";
import type { AccountService } from "../accounts/account.service";
import type { MemberScope } from "../accounts/member-scope";
import { BillingErrors } from "../errors";
import { decodeCursor, encodeCursor } from "./request-log-cursor";
import type { RequestAnalyticsStore } from "./request-analytics.store";
import type { RequestLogFilterSearch, RequestLogOwner, RequestLogSearch, RequestLogStore } from "./request-log.store";

/** Rows one CSV export carries at most. */
export const REQUEST_LOG_CSV_MAX_ROWS = 100_000;
const EXPORT_PAGE = 1_000;

export interface RequestLogExport {
  organizationId: string;
  pages: AsyncGenerator<RequestLogEntry[]>;
}

/**
 * Who reads which entries: a key its own (`GET /v1/usage/requests`, no scope needed), a member their
 * chosen organization's (the cabinet's Requests page), the operator any organization's. The page and
 * its CSV share one filter, so the export holds exactly the rows the page lists.
 */
export class RequestLogService {
  constructor(
    private readonly store: RequestLogStore,
    private readonly analytics: RequestAnalyticsStore,
    private readonly scope: MemberScope,
    private readonly accounts: AccountService,
  ) {}

  /** The gateway's batch of refusals (docs/api.md "Request log"): collapsed and bounded per key by the store. */
  async recordRefusals(batch: RecordRefusalsRequest): Promise<number> {
    return this.store.recordRefusals(batch.refusals);
  }

  async totalsForMember(identity: SessionIdentity, f: CabinetRequestLogFilter): Promise<RequestLogTotals> {
    const { organizationId } = await this.scope.of(identity);
    return this.totals(searchOf({ organizationId, keyId: f.key_id }, f));
  }

  async totalsForOrganization(organizationId: string, f: CabinetRequestLogFilter): Promise<RequestLogTotals> {
    await this.accounts.getOrganization(organizationId);
    return this.totals(searchOf({ organizationId, keyId: f.key_id }, f));
  }

  private async totals(search: RequestLogFilterSearch): Promise<RequestLogTotals> {
    return { object: "request_totals", ...(await this.analytics.totals(search)) };
  }

  async forKey(identity: KeyIdentity, q: RequestLogQuery): Promise<RequestLogList> {
    return customersView(await this.page({ keyId: identity.key_id }, q));
  }

  async forMember(identity: SessionIdentity, q: CabinetRequestLogQuery): Promise<RequestLogList> {
    const { organizationId } = await this.scope.of(identity);
    return customersView(await this.page({ organizationId, keyId: q.key_id }, q));
  }

  /** The operator's listing: with what the upstream reported of a media job (its `upstream_usage`). */
  async forOrganization(organizationId: string, q: CabinetRequestLogQuery): Promise<RequestLogList> {
    await this.accounts.getOrganization(organizationId);
    return this.page({ organizationId, keyId: q.key_id }, q);
  }

  /** Checks access at once (a refusal is an HTTP error, not a broken download), then yields pages. */
  async exportForMember(identity: SessionIdentity, f: CabinetRequestLogFilter): Promise<RequestLogExport> {
    const { organizationId } = await this.scope.of(identity);
    return { organizationId, pages: this.pages(searchOf({ organizationId, keyId: f.key_id }, f)) };
  }

  async exportForOrganization(organizationId: string, f: CabinetRequestLogFilter): Promise<RequestLogExport> {
    await this.accounts.getOrganization(organizationId);
    return { organizationId, pages: this.pages(searchOf({ organizationId, keyId: f.key_id }, f)) };
  }

  private async page(owner: RequestLogOwner, q: Omit<RequestLogQuery, "cursor"> & { cursor?: string | undefined }): Promise<RequestLogList> {
    const search = searchOf(owner, q);
    const rows = await this.store.search({ ...search, ...(q.cursor ? { after: decodeCursor(q.cursor) } : {}), limit: q.limit + 1 });
    const data = rows.slice(0, q.limit);
    const hasMore = rows.length > q.limit;
    return { object: "list", data, has_more: hasMore, next_cursor: hasMore ? encodeCursor(data.at(-1)!) : null };
  }

  /** `search` is checked by the caller (a bad range is a 400 then, not a download cut after its header). */
  private async *pages(search: Omit<RequestLogSearch, "limit">): AsyncGenerator<RequestLogEntry[]> {
    let after: RequestLogSearch["after"];
    for (let sent = 0; sent < REQUEST_LOG_CSV_MAX_ROWS;) {
      const rows = await this.store.search({ ...search, after, limit: Math.min(EXPORT_PAGE, REQUEST_LOG_CSV_MAX_ROWS - sent) });
      if (rows.length === 0) return;
      yield rows;
      sent += rows.length;
      const last = rows.at(-1)!;
      after = { createdAt: new Date(last.created_at), holdId: last.id };
    }
  }
}

/** What a customer sees of entries: an upstream's usage (our cost of their request) is the operator's. */
function customersView(list: RequestLogList): RequestLogList {
  return { ...list, data: list.data.map(({ upstream_usage: _upstream, ...entry }) => entry) };
}

const OUTCOMES = new Set(["succeeded", "failed", "refused"]);

function searchOf(
  owner: RequestLogOwner,
  f: { from?: string | undefined; to?: string | undefined; model?: string | undefined; model_prefix?: string | undefined; status?: string | undefined },
): RequestLogFilterSearch {
  const from = f.from ? new Date(f.from) : undefined;
  const to = f.to ? new Date(f.to) : undefined;
  if (from && to && from >= to) throw BillingErrors.badRequestLogRange();
  const status = f.status === undefined ? undefined : OUTCOMES.has(f.status) ? (f.status as "succeeded" | "failed" | "refused") : Number(f.status);
  return { owner, from, to, model: f.model, modelPrefix: f.model_prefix, status };
}
