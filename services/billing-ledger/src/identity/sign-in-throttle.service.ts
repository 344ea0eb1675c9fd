import { CabinetErrors } from "../errors";
import type { SignInFailureRepository } from "./sign-in-failure.repository";

export interface SignInThrottlePolicy {
  /** CABINET_SIGN_IN_MAX_FAILURES_PER_ACCOUNT */
  perAccount: number;
  /** CABINET_SIGN_IN_MAX_FAILURES_PER_ADDRESS */
  perAddress: number;
  /** CABINET_SIGN_IN_WINDOW_S, in ms */
  windowMs: number;
}

export interface SignInAttempt {
  /** The password was right: the account's failures are forgiven. */
  succeeded(): Promise<void>;
}

/**
 * Failed sign-ins are limited per account (a guesser spread over many addresses) and per address (one
 * address trying many accounts), over a sliding window kept in the database, so every replica of
 * billing and every gateway in front of it count together. Over either limit the attempt is refused
 * before its password is looked at, with Retry-After saying when the oldest failure leaves the window.
 */
export class SignInThrottle {
  constructor(
    private readonly failures: SignInFailureRepository,
    private readonly policy: SignInThrottlePolicy,
    private readonly clock: () => Date,
  ) {}

  async admit(email: string, address: string): Promise<SignInAttempt> {
    const now = this.clock();
    const since = new Date(now.getTime() - this.policy.windowMs);
    await this.failures.purgeBefore(since);
    const id = await this.failures.record(email, address, now);
    const counted = await this.failures.countSince(email, address, since, id);
    const overAccount = counted.account > this.policy.perAccount;
    const overAddress = counted.address > this.policy.perAddress;
    if (overAccount || overAddress) {
      // A refused attempt checked nothing, so it is no guess to count; counting it would let a guesser keep an account locked forever.
      await this.failures.delete(id);
      const freedAt = (oldest: Date | null) => (oldest ?? now).getTime() + this.policy.windowMs;
      const until = Math.max(overAccount ? freedAt(counted.accountOldest) : 0, overAddress ? freedAt(counted.addressOldest) : 0);
      throw CabinetErrors.tooManyFailures(Math.max(1, Math.ceil((until - now.getTime()) / 1000)));
    }
    return { succeeded: () => this.failures.clearAccount(email) };
  }
}
