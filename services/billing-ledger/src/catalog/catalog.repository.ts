import { writeOutboxMessage } from "@meter/messaging";
import type { Db } from "../db";
import type { CatalogModel } from "../generated/prisma/client";

/** The catalog's models and their tariffs; every change is announced on the bus through the outbox. */
export class CatalogRepository {
  constructor(private readonly db: Db) {}

  /** Creates or replaces the model and writes `billing.catalog.changed` in the same transaction. */
  async upsert(
    id: string,
    data: { enabled: boolean; displayName: string | null; provider: object; operations: object },
  ): Promise<{ row: CatalogModel; created: boolean }> {
    return this.db.$transaction(async (tx) => {
      const existing = await tx.catalogModel.findUnique({ where: { id } });
      const row = existing ? await tx.catalogModel.update({ where: { id }, data }) : await tx.catalogModel.create({ data: { id, ...data } });
      await writeOutboxMessage(tx, "billing.catalog.changed", { version: "v1", model_id: id });
      return { row, created: !existing };
    });
  }

  async find(id: string): Promise<CatalogModel | undefined> {
    return (await this.db.catalogModel.findUnique({ where: { id } })) ?? undefined;
  }

  /** By id. */
  list(): Promise<CatalogModel[]> {
    return this.db.catalogModel.findMany({ orderBy: { id: "asc" } });
  }
}
