import { columnNamingErrors, snakeCaseOf, type PgRow } from "./pg-row";

describe("PgRow", () => {
  it("types a Prisma model as pg returns its row: snake_case columns, int8 as a string", () => {
    type Model = { id: string; keyId: string; estimatedCost: bigint; cost: bigint | null; nextAttemptAt: Date; attempts: number };
    const row: PgRow<Model> = { id: "a", key_id: "k", estimated_cost: "10", cost: null, next_attempt_at: new Date(0), attempts: 1 };
    // @ts-expect-error pg never returns int8 as a number
    const wrong: PgRow<Model>["estimated_cost"] = 10;
    expect([row.key_id, wrong]).toEqual(["k", 10]);
    expect(snakeCaseOf("nextAttemptAt")).toBe("next_attempt_at");
  });

  it("finds the fields of a schema whose column breaks the convention PgRow relies on", () => {
    const schema = `model Thing {
  id        String @id @db.Uuid
  keyId     String @map("key_id") @db.Uuid
  /// a comment
  createdAt DateTime @map("created")
  ownerId   String?

  @@map("things")
}
`;
    expect(columnNamingErrors(schema)).toEqual([
      'Thing.createdAt: column "created", PgRow expects "created_at"',
      'Thing.ownerId: column "ownerId", PgRow expects "owner_id"',
    ]);
  });
});
