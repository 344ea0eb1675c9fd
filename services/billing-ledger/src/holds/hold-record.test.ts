import { readFileSync } from "node:fs";
import path from "node:path";
import { columnNamingErrors } from "@meter/service-kit";

// HoldSqlRow types apply_hold_ops's rows as PgRow over the generated Hold model: exact only while every
// column of `holds` is its field's name in snake_case (other models of this schema may map otherwise).
it("every column of the Hold model is its field's name in snake_case", () => {
  const schema = readFileSync(path.join(__dirname, "..", "..", "prisma", "schema.prisma"), "utf8");
  expect(columnNamingErrors(schema).filter((e) => e.startsWith("Hold."))).toEqual([]);
  expect(columnNamingErrors(schema.replace('@map("owner_ref")', '@map("owner")')).filter((e) => e.startsWith("Hold."))).toEqual([
    'Hold.ownerRef: column "owner", PgRow expects "owner_ref"',
  ]);
});
