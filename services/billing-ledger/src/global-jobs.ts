import type { Pool, PoolClient } from "pg";
import { APPLICATION_NAME } from "./db";

/**
 * The global jobs that write several organizations in one transaction by nature (docs/scale.md,
 * "Global jobs"). Their transactions carry the job's name as application_name, so an operator sees
 * which job a session runs and the test suites' money-path check leaves them out by name.
 */
export const GlobalJob = {
  requestLogRollup: `${APPLICATION_NAME}/request-log-rollup`,
  requestLogRetention: `${APPLICATION_NAME}/request-log-retention`,
} as const;
export type GlobalJob = (typeof GlobalJob)[keyof typeof GlobalJob];

/** BEGIN, with the transaction named after the job (one round trip; the name is ours, never input). */
export function beginGlobalJob(job: GlobalJob): string {
  return `BEGIN; SET LOCAL application_name = '${job}'`;
}

/** `work` as one transaction of the job, on one connection of the pool; rolled back when it throws. */
export async function inGlobalJob<T>(pool: Pool, job: GlobalJob, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query(beginGlobalJob(job));
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (e) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
}
