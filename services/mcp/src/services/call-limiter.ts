import { randomUUID } from "node:crypto";
import type { Logger } from "@meter/service-kit";
import { ToolFailures } from "../errors";
import type { LeaseRepository } from "../repositories/lease.repository";

export interface CallLimits {
  /** This process's id in the lease table. */
  processId: string;
  perProcess: number;
  perOrganization: number;
  leaseTtlMs: number;
}

/** Where the organization's slots are kept (the lease table). */
export type LeaseStore = Pick<LeaseRepository, "tryAcquire" | "renew" | "release">;

/** A running call's slots; release it exactly once, in `finally`. */
export interface CallSlot {
  release(): Promise<void>;
}

/**
 * The two limits on running tool calls: per process (a counter here) and per organization across every
 * MCP process (a lease row in the shared database, renewed while the call runs). A refused call never
 * waits: it ends at once in `mcp_busy`, so an agent is never left hanging on a slot.
 */
export class CallLimiter {
  private active = 0;

  constructor(
    private readonly leases: LeaseStore,
    private readonly limits: CallLimits,
    private readonly logger: Logger,
  ) {}

  /**
   * The organization's slot first, then this process's: a call its organization refuses never holds a
   * process place, so one organization's burst cannot turn away another's calls. A process refusal
   * gives the organization's slot back before answering.
   */
  async acquire(organizationId: string, tool: string): Promise<CallSlot> {
    const id = randomUUID();
    let acquired: boolean;
    try {
      acquired = await this.leases.tryAcquire(
        { id, organizationId, processId: this.limits.processId, tool },
        this.limits.perOrganization,
        this.limits.leaseTtlMs,
      );
    } catch (e) {
      this.logger.warn({ err: e }, "could not take a tool call lease");
      throw ToolFailures.unavailable("the MCP database");
    }
    if (!acquired) throw ToolFailures.busy("organization", this.limits.perOrganization);
    // Checked and counted in one synchronous step: calls arriving together cannot all pass.
    if (this.active >= this.limits.perProcess) {
      await this.leases.release(id).catch((e: unknown) => this.logger.warn({ err: e, lease: id }, "could not release a refused call's lease"));
      throw ToolFailures.busy("process", this.limits.perProcess);
    }
    this.active++;
    let released = false;
    const renew = () =>
      this.leases.renew(id, this.limits.leaseTtlMs).then(
        (alive) => {
          if (!alive && !released) this.logger.warn({ lease: id }, "a running tool call's lease had expired (renewals failed for longer than its TTL)");
        },
        (e: unknown) => this.logger.warn({ err: e, lease: id }, "could not renew a tool call lease"),
      );
    const renewal = setInterval(() => void renew(), Math.max(250, Math.floor(this.limits.leaseTtlMs / 3)));
    return {
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(renewal);
        this.active--;
        // A lease that cannot be deleted now expires by itself within the TTL.
        await this.leases.release(id).catch((e: unknown) => this.logger.warn({ err: e, lease: id }, "could not release a tool call lease"));
      },
    };
  }
}
