import type {
  CabinetLedgerCsvQuery,
  CabinetLedgerLine,
  CabinetLedgerLines,
  CabinetLedgerLinesQuery,
  CabinetLedgerPage,
  CabinetLedgerQuery,
  SessionIdentity,
} from "@meter/contracts";
import type { LedgerLinesRepository } from "./ledger-lines.repository";
import type { MemberLedgerRepository } from "./member-ledger.repository";
import type { MemberScope } from "./member-scope";

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
    return this.linesOf((await this.scope.of(identity)).organizationId, q);
  }

  /** The operator's view of one organization's lines (the caller checked it exists). */
  async linesOf(organizationId: string, q: CabinetLedgerLinesQuery): Promise<CabinetLedgerLines> {
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

  /**
   * The lines the page shows under the same filter (allowances included exactly when the page shows
   * them), every page of them. Checks access at once (so a refusal is an HTTP error, not a broken
   * download), then yields pages.
   */
  async export(identity: SessionIdentity, filter: CabinetLedgerCsvQuery): Promise<{ organizationId: string; pages: AsyncGenerator<CabinetLedgerLine[]> }> {
    const { organizationId } = await this.scope.of(identity);
    const lines = this.lines;
    async function* pages(): AsyncGenerator<CabinetLedgerLine[]> {
      let before: number | undefined;
      for (let sent = 0; sent < CSV_MAX_ROWS;) {
        const rows = await lines.page({ organizationId, ...dates(filter), status: filter.status, before, limit: Math.min(EXPORT_PAGE, CSV_MAX_ROWS - sent) });
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
