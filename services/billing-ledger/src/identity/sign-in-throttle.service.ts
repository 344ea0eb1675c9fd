import { CabinetErrors } from "../errors";
import type { FailureCount, SignInFailureRepository } from "./sign-in-failure.repository";
import { throttleAddress } from "./client-address";

export interface SignInThrottlePolicy {
  /** CABINET_SIGN_IN_FREE_FAILURES: failures of one account from one address before delays start. */
  freePerAccountAddress: number;
  /** CABINET_SIGN_IN_FREE_FAILURES_PER_ADDRESS: failures from one address, any accounts, before delays start. */
  freePerAddress: number;
  /** CABINET_SIGN_IN_MAX_DELAY_S, in ms: the longest delay the doubling reaches. */
  maxDelayMs: number;
  /** CABINET_SIGN_IN_WINDOW_S, in ms: how long a failure counts. */
  windowMs: number;
}

export interface SignInAttempt {
  /** The password was right: this address's failures on the account are forgiven. */
  succeeded(): Promise<void>;
}

/**
 * Failed sign-ins slow down the address they came from, never the account for everyone: per account
 * and address (a guesser of one member's password), and per address (one address trying many
 * accounts). Past a few free failures each next attempt must wait 1 s, then 2, 4, ... up to the cap,
 * after the last failure; an earlier one is refused before its password is looked at (429, Retry-After).
 * The right password from another address still signs in. The failures are kept in the database, so
 * every replica of billing and every gateway in front of it count together.
 */
export class SignInThrottle {
  constructor(
    private readonly failures: SignInFailureRepository,
    private readonly policy: SignInThrottlePolicy,
    private readonly clock: () => Date,
  ) {}

  async admit(email: string, clientAddress: string): Promise<SignInAttempt> {
    const address = throttleAddress(clientAddress);
    const now = this.clock();
    await this.failures.purgeBefore(new Date(now.getTime() - this.policy.windowMs));
    // Written before the count, so concurrent guesses see each other as fresh failures and wait.
    const { id, ...before } = await this.failures.recordAndCountBefore(email, address, new Date(now.getTime() - this.policy.windowMs), now);
    const freeAt = Math.max(this.freeAt(before.pair, this.policy.freePerAccountAddress), this.freeAt(before.address, this.policy.freePerAddress));
    if (freeAt > now.getTime()) {
      // A refused attempt checked nothing, so it is no guess to count; counting it would keep the wait from ever ending.
      await this.failures.delete(id);
      throw CabinetErrors.tooManyFailures(Math.max(1, Math.ceil((freeAt - now.getTime()) / 1000)));
    }
    return { succeeded: () => this.failures.clearAccountAt(email, address) };
  }

  /** When the next attempt may come, after `count` failures of which `free` cost no wait. */
  private freeAt(count: FailureCount, free: number): number {
    if (count.failures < free || !count.last) return 0;
    const delay = Math.min(this.policy.maxDelayMs, 1000 * 2 ** Math.min(30, count.failures - free));
    return count.last.getTime() + delay;
  }
}
