import type { BillingDatabase } from "./db";
import { CabinetSessionRepository } from "./identity/cabinet-session.repository";
import { DirectoryRepository } from "./accounts/directory.repository";
import { InvitationRepository } from "./identity/invitation.repository";
import { LedgerLinesRepository } from "./accounts/ledger-lines.repository";
import { MemberLedgerRepository } from "./accounts/member-ledger.repository";
import { SignInFailureRepository } from "./identity/sign-in-failure.repository";
import { SpendRepository } from "./accounts/spend.repository";
import type { AccountService } from "./accounts/account.service";
import type { ApiKeyService } from "./keys/api-key.service";
import { DirectoryService } from "./accounts/directory.service";
import { InvitationService } from "./identity/invitation.service";
import type { KeyUsageService } from "./keys/key-usage.service";
import type { UsageAnalyticsService } from "./request-log/usage-analytics.service";
import { MemberKeysService } from "./keys/member-keys.service";
import { MemberLedgerService } from "./accounts/member-ledger.service";
import type { MemberScope } from "./accounts/member-scope";
import { MoneyReportService } from "./accounts/money-report.service";
import { SessionService } from "./identity/session.service";
import { SignInThrottle, type SignInThrottlePolicy } from "./identity/sign-in-throttle.service";
import { SignInService } from "./identity/sign-in.service";
import { UserRepository } from "./identity/user.repository";

/** The web cabinet's rules: sign-in, sessions, invitations, and what members and the operator read. */
export interface CabinetServices {
  signIn: SignInService;
  sessions: SessionService;
  invitations: InvitationService;
  memberKeys: MemberKeysService;
  money: MoneyReportService;
  ledger: MemberLedgerService;
  directory: DirectoryService;
  /** What a member's call may touch: the organization chosen in the switcher, membership checked. */
  scope: MemberScope;
}

export interface CabinetOptions {
  /** CABINET_SESSION_TTL_HOURS, in ms. */
  sessionTtlMs: number;
  /** CABINET_INVITATION_TTL_HOURS, in ms. */
  invitationTtlMs: number;
  throttle: SignInThrottlePolicy;
}

/** The settings' defaults (config.ts), for whoever builds billing's rules without a config (the CLI). */
export const DEFAULT_CABINET_OPTIONS: CabinetOptions = {
  sessionTtlMs: 12 * 3_600_000,
  invitationTtlMs: 24 * 3_600_000,
  throttle: { freePerAccountAddress: 3, freePerAddress: 20, maxDelayMs: 300_000, windowMs: 900_000 },
};

export function createCabinetServices(
  database: BillingDatabase,
  deps: {
    accounts: AccountService;
    keys: ApiKeyService;
    keyUsage: KeyUsageService;
    analytics: UsageAnalyticsService;
    scope: MemberScope;
    timezone: string;
    clock?: (() => Date) | undefined;
  },
  opts: CabinetOptions = DEFAULT_CABINET_OPTIONS,
): CabinetServices {
  const db = database.prisma;
  const clock = deps.clock ?? (() => new Date());
  const directory = new DirectoryRepository(db);
  const sessionRows = new CabinetSessionRepository(db);
  const invitations = new InvitationRepository(db);
  const users = new UserRepository(db);
  const scope = deps.scope;
  const sessions = new SessionService({ users, sessions: sessionRows, directory, ttlMs: opts.sessionTtlMs, timezone: deps.timezone, clock });
  return {
    sessions,
    signIn: new SignInService({
      users,
      sessions,
      sessionRows,
      invitations,
      throttle: new SignInThrottle(new SignInFailureRepository(db), opts.throttle, clock),
      clock,
    }),
    invitations: new InvitationService({ accounts: deps.accounts, invitations, ttlMs: opts.invitationTtlMs, clock }),
    memberKeys: new MemberKeysService(deps.keys, deps.keyUsage, scope, deps.analytics),
    money: new MoneyReportService(deps.accounts, new SpendRepository(db, deps.timezone), scope, deps.timezone, deps.clock),
    ledger: new MemberLedgerService(new MemberLedgerRepository(db), new LedgerLinesRepository(db), scope),
    directory: new DirectoryService(directory),
    scope,
  };
}
