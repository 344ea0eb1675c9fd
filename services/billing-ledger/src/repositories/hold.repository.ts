import type { Hold, HoldStatus } from "@meter/contracts";
import type { Db } from "../db";
import type { Hold as HoldModel } from "../generated/prisma/client";
import { renderHold } from "../services/hold.service";

/** Reads of holds (writes go through HoldOpsRepository's single SQL function). */
export class HoldRepository {
  constructor(private readonly db: Db) {}

  async find(id: string): Promise<Hold | undefined> {
    const h = await this.db.hold.findUnique({ where: { id } });
    return h ? toHold(h) : undefined;
  }

  async list(filter: { status?: HoldStatus; source?: string; createdBefore?: Date; oldestFirst?: boolean; limit: number }): Promise<Hold[]> {
    const rows = await this.db.hold.findMany({
      where: {
        ...(filter.status ? { status: filter.status } : {}),
        ...(filter.source ? { source: filter.source } : {}),
        ...(filter.createdBefore ? { createdAt: { lt: filter.createdBefore } } : {}),
      },
      orderBy: { createdAt: filter.oldestFirst ? "asc" : "desc" },
      take: filter.limit,
    });
    return rows.map(toHold);
  }
}

function toHold(h: HoldModel): Hold {
  return renderHold({
    hold_id: h.id,
    status: h.status,
    amount: h.amount,
    settled: h.settled,
    organization_id: h.organizationId,
    key_id: h.keyId,
    operation: h.operation,
    model: h.model,
    source: h.source,
    budget_day: h.budgetDay,
    created_at: h.createdAt,
    resolved_at: h.resolvedAt,
  });
}
