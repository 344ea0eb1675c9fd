import type { BalanceResponse, ModelActivity, SessionIdentity, SpendReport } from "@meter/contracts";
import type { SpendRepository } from "./spend.repository";
import type { AccountService } from "./account.service";
import type { MemberScope } from "./member-scope";

/**
 * The chosen organization's money as a member sees it: the balance, and where the money went (charges
 * per budget day, the day a settlement counts on in BUDGET_TIMEZONE exactly as the daily budget counts
 * it, split by model and operation).
 */
export class MoneyReportService {
  constructor(
    private readonly accounts: AccountService,
    private readonly spend: SpendRepository,
    private readonly scope: MemberScope,
    private readonly timezone: string,
    /** Tests move the clock as they do for hold operations; otherwise the database's now(). */
    private readonly clock?: () => Date,
  ) {}

  async balance(identity: SessionIdentity): Promise<BalanceResponse> {
    return this.accounts.balance((await this.scope.of(identity)).organizationId);
  }

  async spendPerDay(identity: SessionIdentity, days: number): Promise<SpendReport> {
    const { organizationId } = await this.scope.of(identity);
    const window = lastDays(await this.spend.today(this.clock?.() ?? null), days);
    return {
      object: "spend_report",
      organization_id: organizationId,
      timezone: this.timezone,
      days: window,
      data: await this.spend.perDay(organizationId, window[0]!),
    };
  }

  /** For the operator's catalog page: what a tariff change would touch. */
  modelActivity(days: number): Promise<ModelActivity[]> {
    return this.spend.activity(new Date((this.clock?.() ?? new Date()).getTime() - days * 86_400_000));
  }
}

/** The `n` calendar days ending with `today` (YYYY-MM-DD), oldest first. */
export function lastDays(today: string, n: number): string[] {
  const end = Date.parse(`${today}T00:00:00Z`);
  if (Number.isNaN(end) || n < 1) throw new RangeError(`cannot count ${n} days back from "${today}"`);
  return Array.from({ length: n }, (_, i) => new Date(end - (n - 1 - i) * 86_400_000).toISOString().slice(0, 10));
}
