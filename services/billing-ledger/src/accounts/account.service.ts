import { toMicrorub, type BalanceResponse } from "@meter/contracts";
import { BillingErrors } from "../errors";
import type { CreditRepository } from "../holds/credit.repository";
import type { AccountRepository } from "./account.repository";

export interface LedgerEntryDto {
  id: number;
  object: "ledger_entry";
  organization_id: string;
  key_id: string | null;
  hold_id: string | null;
  kind: string;
  amount_microrub: number;
  balance_after_microrub: number;
  reserved_after_microrub: number;
  reference: string | null;
  created_at: string;
}

/** Users, organizations, memberships, credits and balances: the account cabinet's rules. */
export class AccountService {
  constructor(
    private readonly accounts: AccountRepository,
    private readonly credits: CreditRepository,
  ) {}

  /** Idempotent on email: a second call returns the existing user. */
  async createUser(email: string): Promise<{ user: { id: string; email: string; created_at: string }; created: boolean }> {
    const { user, created } = await this.accounts.findOrCreateUser(email.trim().toLowerCase());
    return { user: renderUser(user), created };
  }

  async getUser(id: string) {
    const user = await this.accounts.findUser(id);
    if (!user) throw BillingErrors.userNotFound(id);
    return renderUser(user);
  }

  async createOrganization(name: string) {
    const org = await this.accounts.createOrganization(name);
    return { id: org.id, name: org.name, created_at: org.createdAt.toISOString() };
  }

  async getOrganization(id: string) {
    const org = await this.accounts.findOrganization(id);
    if (!org) throw BillingErrors.organizationNotFound(id);
    return renderOrganization(org);
  }

  /** Under `low_balance_microrub` of available balance, `balance.low` is sent (null: never). */
  async updateOrganization(id: string, changes: { low_balance_microrub: number | null }) {
    const org = await this.accounts.updateOrganization(id, {
      lowBalance: changes.low_balance_microrub === null ? null : BigInt(changes.low_balance_microrub),
    });
    if (!org) throw BillingErrors.organizationNotFound(id);
    return renderOrganization(org);
  }

  async addMember(organizationId: string, userId: string) {
    await this.getOrganization(organizationId);
    await this.getUser(userId);
    const m = await this.accounts.addMember(organizationId, userId);
    return { organization_id: m.organizationId, user_id: m.userId, created_at: m.createdAt.toISOString() };
  }

  /**
   * Adds prepaid credit. Idempotent on (organization, reference): the same reference and amount replays
   * the original entry; the same reference with another amount is refused.
   */
  async credit(organizationId: string, amount: number, reference: string): Promise<{ entry: LedgerEntryDto; created: boolean }> {
    const result = await this.credits.credit(organizationId, BigInt(amount), reference);
    if (result.outcome === "reference_reused") throw BillingErrors.creditReferenceReused(reference);
    if (result.outcome === "no_organization") throw BillingErrors.organizationNotFound(organizationId);
    return { entry: renderLedgerEntry(result.entry), created: result.outcome === "credited" };
  }

  async balance(organizationId: string): Promise<BalanceResponse> {
    const org = await this.accounts.findOrganization(organizationId);
    if (!org) throw BillingErrors.organizationNotFound(organizationId);
    return {
      organization_id: org.id,
      balance_microrub: toMicrorub(org.balance),
      reserved_microrub: toMicrorub(org.reserved),
      available_microrub: toMicrorub(org.balance - org.reserved),
    };
  }

  /** Newest first; `cursor` is the id of the last entry of the previous page. */
  async ledger(organizationId: string, limit: number, cursor?: number) {
    await this.getOrganization(organizationId);
    const rows = await this.accounts.ledger(organizationId, limit + 1, cursor);
    const page = rows.slice(0, limit).map(renderLedgerEntry);
    const hasMore = rows.length > limit;
    return {
      object: "list" as const,
      data: page,
      has_more: hasMore,
      next_cursor: hasMore ? String(page[page.length - 1]!.id) : null,
    };
  }
}

function renderUser(u: { id: string; email: string; createdAt: Date }) {
  return { id: u.id, email: u.email, created_at: u.createdAt.toISOString() };
}

export function renderLedgerEntry(e: {
  id: bigint;
  organizationId: string;
  keyId: string | null;
  holdId: string | null;
  kind: string;
  amount: bigint;
  balanceAfter: bigint;
  reservedAfter: bigint;
  reference: string | null;
  createdAt: Date;
}): LedgerEntryDto {
  return {
    id: toMicrorub(e.id),
    object: "ledger_entry",
    organization_id: e.organizationId,
    key_id: e.keyId,
    hold_id: e.holdId,
    kind: e.kind,
    amount_microrub: toMicrorub(e.amount),
    balance_after_microrub: toMicrorub(e.balanceAfter),
    reserved_after_microrub: toMicrorub(e.reservedAfter),
    reference: e.reference,
    created_at: e.createdAt.toISOString(),
  };
}

function renderOrganization(org: { id: string; name: string; createdAt: Date; lowBalance: bigint | null }) {
  return {
    id: org.id,
    name: org.name,
    created_at: org.createdAt.toISOString(),
    low_balance_microrub: org.lowBalance === null ? null : toMicrorub(org.lowBalance),
  };
}
