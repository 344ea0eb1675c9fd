import { setTimeout as sleep } from "node:timers/promises";
import { createLogger } from "@meter/service-kit";
import type { Lease } from "../domain/lease";
import type { ToolFailure } from "../errors";
import { CallLimiter, type LeaseStore } from "./call-limiter";

/** The lease table in memory, answering after a database's delay so calls overlap as they do in production. */
class SlowLeases implements LeaseStore {
  readonly held = new Map<string, string>();

  async tryAcquire(lease: Lease, max: number): Promise<boolean> {
    await sleep(20);
    const mine = [...this.held.values()].filter((org) => org === lease.organizationId).length;
    if (mine >= max) return false;
    this.held.set(lease.id, lease.organizationId);
    return true;
  }

  async renew(id: string): Promise<boolean> {
    return this.held.has(id);
  }

  async release(id: string): Promise<void> {
    this.held.delete(id);
  }
}

const limits = { processId: "p1", perProcess: 4, perOrganization: 2, leaseTtlMs: 30_000 };

/** Admitted calls renew their leases on a timer until released: every test releases what it was given. */
const admitted: { release(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(admitted.splice(0).map((slot) => slot.release()));
});

function outcome(p: Promise<{ release(): Promise<void> }>): Promise<string> {
  return p.then(
    (slot) => {
      admitted.push(slot);
      return "admitted";
    },
    (e: ToolFailure) => `busy:${String(e.error.details?.limit)}`,
  );
}

describe("CallLimiter", () => {
  it("one organization's burst does not take the process places another organization needs", async () => {
    const leases = new SlowLeases();
    const limiter = new CallLimiter(leases, limits, createLogger("test", "silent"));
    const burst = Array.from({ length: 6 }, () => outcome(limiter.acquire("org-a", "create_message")));
    const other = outcome(limiter.acquire("org-b", "create_message"));
    const results = await Promise.all(burst);
    expect(results.filter((r) => r === "admitted")).toHaveLength(2);
    expect(results.filter((r) => r === "busy:organization")).toHaveLength(4);
    expect(await other).toBe("admitted");
  });

  it("a call refused by the process limit gives its organization's slot back", async () => {
    const leases = new SlowLeases();
    const limiter = new CallLimiter(leases, { ...limits, perProcess: 2 }, createLogger("test", "silent"));
    admitted.push(await limiter.acquire("org-a", "t"), await limiter.acquire("org-b", "t"));
    expect(await outcome(limiter.acquire("org-c", "t"))).toBe("busy:process");
    expect([...leases.held.values()].sort()).toEqual(["org-a", "org-b"]);
  });
});
