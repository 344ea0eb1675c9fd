import type { Hold, HoldStatus } from "@meter/contracts";
import type { Db } from "../db";
import { holdFromModel } from "./hold-record";

export interface HoldFilter {
  status?: HoldStatus | undefined;
  source?: string | undefined;
  createdBefore?: Date | undefined;
  oldestFirst?: boolean | undefined;
  limit: number;
}

/** Reads of holds (writes go through HoldOpsRepository's single SQL function). */
export class HoldRepository {
  constructor(private readonly db: Db) {}

  /** An operator's look at one hold by its id alone (the index on `id`; on Citus, every shard). */
  async find(id: string): Promise<Hold | undefined> {
    const h = await this.db.hold.findFirst({ where: { id } });
    return h ? holdFromModel(h) : undefined;
  }

  async list(filter: HoldFilter): Promise<Hold[]> {
    const rows = await this.db.hold.findMany({
      where: {
        ...(filter.status ? { status: filter.status } : {}),
        ...(filter.source ? { source: filter.source } : {}),
        ...(filter.createdBefore ? { createdAt: { lt: filter.createdBefore } } : {}),
      },
      orderBy: [{ createdAt: filter.oldestFirst ? "asc" : "desc" }, { id: "asc" }],
      take: filter.limit,
    });
    return rows.map(holdFromModel);
  }

  /**
   * Active holds of one owner service placed before `createdBefore`, oldest first, after the cursor (the
   * last hold of the previous page): the audit pages through them without asking twice in one pass.
   */
  async activeOwnedBy(
    source: string,
    createdBefore: Date,
    limit: number,
    after?: { createdAt: Date; id: string },
  ): Promise<{ hold_id: string; owner_ref: string; created_at: Date; kind: "request" | "allowance"; consumed: bigint }[]> {
    const rows = await this.db.hold.findMany({
      where: {
        status: "active",
        source,
        ownerRef: { not: null },
        createdAt: { lt: createdBefore },
        ...(after ? { OR: [{ createdAt: { gt: after.createdAt } }, { createdAt: after.createdAt, id: { gt: after.id } }] } : {}),
      },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: limit,
      select: { id: true, ownerRef: true, createdAt: true, kind: true, consumed: true },
    });
    return rows.map((r) => ({ hold_id: r.id, owner_ref: r.ownerRef ?? "", created_at: r.createdAt, kind: r.kind, consumed: BigInt(r.consumed) }));
  }

  async findMany(ids: readonly string[]): Promise<Hold[]> {
    const rows = await this.db.hold.findMany({ where: { id: { in: [...ids] } } });
    return rows.map(holdFromModel);
  }

  /** The organization of each of these keys that exists (the books cross-check believes a record only for a key of the organization it names). */
  async organizationsOfKeys(keyIds: readonly string[]): Promise<Map<string, string>> {
    const rows = await this.db.apiKey.findMany({ where: { id: { in: [...keyIds] } }, select: { id: true, organizationId: true } });
    return new Map(rows.map((k) => [k.id, k.organizationId]));
  }

  /** Settled holds of one owner service resolved in [from, before), a page after the id `afterId`. */
  async settledOwnedBy(source: string, from: Date, before: Date, limit: number, afterId?: string): Promise<Hold[]> {
    const rows = await this.db.hold.findMany({
      where: { status: "settled", source, resolvedAt: { gte: from, lt: before }, ...(afterId ? { id: { gt: afterId } } : {}) },
      orderBy: { id: "asc" },
      take: limit,
    });
    return rows.map(holdFromModel);
  }
}
