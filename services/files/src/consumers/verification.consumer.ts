import { CommandQueues } from "@meter/contracts";
import type { Bus, Consumer, RetryPolicy } from "@meter/messaging";
import type { Logger } from "@meter/service-kit";
import type { VerificationService } from "../services/verification.service";

/**
 * `files.upload.completed` -> verify the file. Idempotent: a redelivered message for a file already
 * decided (or deleted) is acknowledged without doing anything. While clamd or the object store is down
 * the message is retried with backoff (VERIFY_RETRY_*); one that runs out of attempts goes to the
 * dead-letter queue and its file stays `verifying` until the retention sweeper sends it again, so a
 * file is never verified unscanned and never forgotten.
 */
export function startVerificationConsumer(
  bus: Bus,
  verification: VerificationService,
  logger: Logger,
  opts: { prefetch: number; retry: RetryPolicy },
): Promise<Consumer> {
  return bus.consume({
    ...CommandQueues.filesVerification,
    prefetch: opts.prefetch,
    retry: opts.retry,
    handler: async ({ file_id }, { attempt }) => {
      const started = Date.now();
      const outcome = await verification.verify(file_id);
      logger.info({ file_id, outcome, attempt, ms: Date.now() - started }, "verification done");
    },
  });
}
