import { readFileSync } from "node:fs";
import path from "node:path";
import { columnNamingErrors } from "@meter/service-kit";

// The repositories type their rows as PgRow over the models generated from schema.prisma: exact only
// while every column is its field's name in snake_case.
it("every column of schema.prisma is its field's name in snake_case", () => {
  const schema = readFileSync(path.join(__dirname, "..", "..", "prisma", "schema.prisma"), "utf8");
  expect(columnNamingErrors(schema)).toEqual([]);
});
