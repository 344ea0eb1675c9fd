import type { GrantAllowanceRequest, Hold } from "@meter/contracts";

/** The key an allowance is granted for, and its organization (whose balance it is reserved from). */
export interface AllowanceKey {
  keyId: string;
  organizationId: string;
}

/**
 * The holder's own records of its allowances, in its database (text's `allowances` table). The
 * allocator decides; the store makes each decision durable. Requests are placed on an allowance by the
 * holder's claim statement, not here: that is where `used` grows, in the request's own commit.
 */
export interface AllowanceStore {
  /** A new allowance row, `granting` and owned by this process, committed before billing is asked. */
  begin(allowance: { id: string } & AllowanceKey): Promise<void>;
  /**
   * granting -> open with what billing granted and its signature of the grant (which covers every
   * request placed on it); false when it is no longer granting (a stop or a take-over closed it).
   */
  open(id: string, granted: number, usableUntil: Date, grantSignature: string | null): Promise<boolean>;
  /** granting -> closed: billing refused, nothing was placed, so no command is needed. */
  refused(id: string): Promise<void>;
  /** granting or open -> closing (no new request may be placed on them), for these allowances of this process. */
  closing(ids: readonly string[]): Promise<void>;
  /** Every granting or open allowance of this process -> closing (a graceful stop). */
  closingAll(): Promise<void>;
  /**
   * closing -> closed for every closing allowance with no request still `reserving` on it, each with
   * its release command (`used_microrub` = its `used`) in the same commit; returns the ids closed.
   */
  closeSettled(): Promise<string[]>;
}

/** billing's grant op (BillingClient.grant): resolves with the allowance's hold, throws AppError when refused. */
export type GrantAllowance = (request: GrantAllowanceRequest) => Promise<Hold>;
