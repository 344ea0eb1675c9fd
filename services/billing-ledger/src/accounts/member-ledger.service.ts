import type {
  CabinetLedgerEntry,
  CabinetLedgerLines,
  CabinetLedgerLinesQuery,
  CabinetLedgerPage,
  CabinetLedgerQuery,
  LedgerKind,
  SessionIdentity,
} from "@meter/contracts";
import type { LedgerLinesRepository } from "./ledger-lines.repository";
import type { MemberLedgerRepository } from "./member-ledger.repository";
import type { MemberScope } from "./member-scope";

export interface LedgerExportFilter {
  kind?: LedgerKind | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

/** Rows one CSV export carries at most; the page says so when a filter would give more. */
export const CSV_MAX_ROWS = 100_000;
const EXPORT_PAGE = 1_000;

/**
 * The chosen organization's ledger: its entries (paginated, and as CSV streamed in pages) and the same
 * as the page shows it, one line per credit or request.
 */
export class MemberLedgerService {
  constructor(
    private readonly ledger: MemberLedgerRepository,
    private readonly lines: LedgerLinesRepository,
    private readonly scope: MemberScope,
  ) {}

  async linesPage(identity: SessionIdentity, q: CabinetLedgerLinesQuery): Promise<CabinetLedgerLines> {
    const { organizationId } = await this.scope.of(identity);
    const rows = await this.lines.page({ organizationId, ...dates(q), status: q.status, before: q.cursor, limit: q.limit + 1 });
    const data = rows.slice(0, q.limit);
    const hasMore = rows.length > q.limit;
    return { object: "list", data, has_more: hasMore, next_cursor: hasMore ? String(data.at(-1)!.id) : null };
  }

  async page(identity: SessionIdentity, q: CabinetLedgerQuery): Promise<CabinetLedgerPage> {
    const { organizationId } = await this.scope.of(identity);
    const rows = await this.ledger.page({ organizationId, ...dates(q), kind: q.kind, before: q.cursor, limit: q.limit + 1 });
    const data = rows.slice(0, q.limit);
    const hasMore = rows.length > q.limit;
    return { object: "list", data, has_more: hasMore, next_cursor: hasMore ? String(data.at(-1)!.id) : null };
  }

  /** Checks access at once (so a refusal is an HTTP error, not a broken download), then yields pages. */
  async export(identity: SessionIdentity, filter: LedgerExportFilter): Promise<{ organizationId: string; pages: AsyncGenerator<CabinetLedgerEntry[]> }> {
    const { organizationId } = await this.scope.of(identity);
    const ledger = this.ledger;
    async function* pages(): AsyncGenerator<CabinetLedgerEntry[]> {
      let before: number | undefined;
      for (let sent = 0; sent < CSV_MAX_ROWS;) {
        const rows = await ledger.page({ organizationId, ...dates(filter), kind: filter.kind, before, limit: Math.min(EXPORT_PAGE, CSV_MAX_ROWS - sent) });
        if (rows.length === 0) return;
        yield rows;
        sent += rows.length;
        before = rows.at(-1)!.id;
      }
    }
    return { organizationId, pages: pages() };
  }
}

function dates(f: { since?: string | undefined; until?: string | undefined }): { since?: Date; until?: Date } {
  return { ...(f.since ? { since: new Date(f.since) } : {}), ...(f.until ? { until: new Date(f.until) } : {}) };
}
