import type { CabinetBalance, ModelActivity, SessionIdentity, SpendQuery, SpendReport } from "@meter/contracts";
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

  async balance(identity: SessionIdentity): Promise<CabinetBalance> {
    const { organizationId } = await this.scope.of(identity);
    const [balance, setAside] = await Promise.all([this.accounts.balance(organizationId), this.spend.setAside(organizationId)]);
    return { ...balance, set_aside_microrub: setAside };
  }

  async spendPerDay(identity: SessionIdentity, q: SpendQuery): Promise<SpendReport> {
    return this.spendOf((await this.scope.of(identity)).organizationId, q);
  }

  /** The operator's view of one organization's spend (the caller checked it exists). */
  async spendOf(organizationId: string, q: SpendQuery): Promise<SpendReport> {
    const window = q.from
      ? daysBetween(q.from, q.to ?? (await this.spend.today(this.clock?.() ?? null)))
      : lastDays(await this.spend.today(this.clock?.() ?? null), q.days);
    const [from, to] = [window[0]!, window.at(-1)!];
    const [data, byKey, months] = await Promise.all([
      this.spend.perDay(organizationId, from, to),
      this.spend.perKey(organizationId, from, to),
      this.spend.perMonth(organizationId, to),
    ]);
    return { object: "spend_report", organization_id: organizationId, timezone: this.timezone, days: window, data, by_key: byKey, months };
  }

  /** For the operator's catalog page: what a tariff change would touch. */
  modelActivity(days: number): Promise<ModelActivity[]> {
    return this.spend.activity(new Date((this.clock?.() ?? new Date()).getTime() - days * 86_400_000));
  }
}

/** Every calendar day from `from` to `to` (YYYY-MM-DD, both included), oldest first. */
export function daysBetween(from: string, to: string): string[] {
  const n = Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000) + 1;
  return lastDays(to, n);
}

/** The `n` calendar days ending with `today` (YYYY-MM-DD), oldest first. */
export function lastDays(today: string, n: number): string[] {
  const end = Date.parse(`${today}T00:00:00Z`);
  if (Number.isNaN(end) || n < 1) throw new RangeError(`cannot count ${n} days back from "${today}"`);
  return Array.from({ length: n }, (_, i) => new Date(end - (n - 1 - i) * 86_400_000).toISOString().slice(0, 10));
}
