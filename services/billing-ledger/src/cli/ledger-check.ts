import { parseArgs } from "node:util";
import { databasesLike } from "@meter/db-tools";
import { defaultDatabaseName } from "@meter/contracts";
import { APPLICATION_NAME, createDatabase } from "../db";
import { BooksCheckService, formatBooksReport } from "../accounts/books-check.service";
import { BooksRepository } from "../accounts/books.repository";

/**
 * `pnpm ledger:check`: proves the books of the billing database (BILLING_LEDGER_DATABASE_URL), or with
 * `--databases-like <pattern>` of every database whose name matches (the test runner checks all the
 * databases its suites created). Prints the figures; exits 1 on any discrepancy.
 */
async function main(): Promise<number> {
  const { values } = parseArgs({ options: { "databases-like": { type: "string" }, url: { type: "string" } } });
  const baseUrl = values.url ?? process.env.BILLING_LEDGER_DATABASE_URL ?? `postgresql://postgres@127.0.0.1:5432/${defaultDatabaseName("billing-ledger")}`;
  const urls = values["databases-like"] ? await databasesLike(baseUrl, values["databases-like"]) : [baseUrl];
  if (urls.length === 0) {
    console.log(`books check: no database matches ${values["databases-like"]}`);
    return 1;
  }
  let failed = 0;
  for (const url of urls) {
    const database = createDatabase(url, 2, undefined, `${APPLICATION_NAME}/books-check`);
    try {
      const report = await new BooksCheckService(new BooksRepository(database.prisma)).run();
      console.log(formatBooksReport(report, new URL(url).pathname.slice(1)));
      if (report.discrepancies.length > 0) failed++;
    } finally {
      await database.close();
    }
  }
  console.log(failed === 0 ? `books check passed for ${urls.length} database(s)` : `books check FAILED for ${failed} of ${urls.length} database(s)`);
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(e);
    process.exit(2);
  },
);
