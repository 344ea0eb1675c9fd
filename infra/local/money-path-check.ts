import { parseArgs } from "node:util";
import { databasesLike } from "@meter/db-tools";
import { BILLING_SESSION, formatCrossing, GLOBAL_JOBS, moneyPathFindings, MONEY_PATH_SUITES } from "@meter/testing";

/**
 * `npm test`'s money path check: in every billing database of the run that the money suites recorded
 * (@meter/testing's money-path.ts), lists each transaction of billing-ledger's own code that wrote rows
 * of more than one organization, and fails if there is one (docs/scale.md). The global jobs are left
 * out by name, the tests' own clients by not being billing's sessions.
 */
async function main(): Promise<number> {
  const { values } = parseArgs({ options: { url: { type: "string" }, "databases-like": { type: "string" } } });
  if (!values.url || !values["databases-like"]) throw new Error("usage: money-path-check --url <postgres url> --databases-like <pattern>");
  const urls = await databasesLike(values.url, values["databases-like"]);
  let recorded = 0;
  let failed = 0;
  for (const url of urls) {
    const findings = await moneyPathFindings(url);
    if (!findings) continue;
    recorded++;
    const name = new URL(url).pathname.slice(1);
    const jobs = findings.globalJobs.map((j) => `${j.session} ${j.transactions}`).join(", ") || "none";
    console.log(
      `${name} (${findings.suite}): ${findings.billingWrites} rows written by billing; multi-organization transactions of global jobs (left out): ${jobs}`,
    );
    if (findings.billingWrites === 0) {
      // Sessions not named as billing's would make every check pass unseen.
      console.log(`  FAILED: no write of a session named ${BILLING_SESSION}: were billing's connections renamed?`);
      failed++;
    }
    if (findings.crossing.length > 0) {
      console.log(`  FAILED: ${findings.crossing.length} transaction(s) of billing's code wrote several organizations:`);
      for (const line of formatCrossing(findings.crossing)) console.log(line);
      failed++;
    }
  }
  if (recorded === 0) {
    console.log(`money path check: nothing to check, no billing database of this run was recorded (none of the ${MONEY_PATH_SUITES.length} money suites ran)`);
    return 0;
  }
  console.log(`(global jobs left out by name: ${GLOBAL_JOBS.join(", ")})`);
  console.log(
    failed === 0
      ? `money path check passed for ${recorded} recorded database(s): one organization per transaction`
      : `money path check FAILED for ${failed} of ${recorded} recorded database(s)`,
  );
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(e);
    process.exit(2);
  },
);
