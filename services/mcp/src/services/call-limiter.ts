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
    private readonly leases: LeaseRepository,
    private readonly limits: CallLimits,
    private readonly logger: Logger,
  ) {}

  async acquire(organizationId: string, tool: string): Promise<CallSlot> {
    if (this.active >= this.limits.perProcess) throw ToolFailures.busy("process", this.limits.perProcess);
    // Counted before the first await: calls arriving together cannot all pass the check above.
    this.active++;
    const id = randomUUID();
    let acquired: boolean;
    try {
      acquired = await this.leases.tryAcquire(
        { id, organizationId, processId: this.limits.processId, tool },
        this.limits.perOrganization,
        this.limits.leaseTtlMs,
      );
    } catch (e) {
      this.active--;
      this.logger.warn({ err: e }, "could not take a tool call lease");
      throw ToolFailures.unavailable("the MCP database");
    }
    if (!acquired) {
      this.active--;
      throw ToolFailures.busy("organization", this.limits.perOrganization);
    }
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
