-- A final outcome is now committed together with the command that resolves its hold (the outbox),
-- so the states between "the answer is known" and "billing confirmed it" are gone.

-- Records caught in those states get their command written here, and become final.
INSERT INTO "outbox_messages" ("message_id", "routing_key", "payload")
  SELECT "hold_id", 'billing.hold.settle',
         jsonb_build_object('version', 'v1', 'hold_id', "hold_id", 'amount_microrub', COALESCE("cost", "estimated_cost"))
  FROM "text_requests" WHERE "state" = 'settling'
  ON CONFLICT ("message_id") DO NOTHING;
INSERT INTO "outbox_messages" ("message_id", "routing_key", "payload")
  SELECT "hold_id", 'billing.hold.release',
         jsonb_build_object('version', 'v1', 'hold_id', "hold_id", 'reason', 'upstream failed; nothing charged')
  FROM "text_requests" WHERE "state" = 'releasing'
  ON CONFLICT ("message_id") DO NOTHING;
UPDATE "text_requests" SET "state" = 'completed', "completed_at" = now() WHERE "state" = 'settling';
UPDATE "text_requests" SET "state" = 'failed', "completed_at" = now() WHERE "state" = 'releasing';

DROP INDEX "text_requests_state_next_attempt_at_idx";
DROP INDEX "text_requests_completed_at_idx";

ALTER TYPE "text_request_state" RENAME TO "text_request_state_old";
CREATE TYPE "text_request_state" AS ENUM ('reserving', 'completed', 'failed');
ALTER TABLE "text_requests" ALTER COLUMN "state" TYPE "text_request_state" USING "state"::text::"text_request_state";
DROP TYPE "text_request_state_old";

-- Texts are JSON in text columns: an upstream's answer may hold U+0000, which jsonb refuses.
ALTER TABLE "text_requests" ALTER COLUMN "plan" TYPE TEXT USING "plan"::text;
ALTER TABLE "text_requests" ALTER COLUMN "result" TYPE TEXT USING "result"::text;
-- A stored error keeps its code and message (it was the rendered answer).
ALTER TABLE "text_requests" ALTER COLUMN "error" TYPE TEXT USING (
  CASE WHEN "error" IS NULL THEN NULL
  ELSE jsonb_build_object(
    'code', ((("error"->>'body')::jsonb)->'error'->>'code'),
    'message', ((("error"->>'body')::jsonb)->'error'->>'message'))::text
  END);

-- The reconciler's query and the purge, each on a partial index (Prisma cannot declare these): they
-- stay small and fast however many finished records there are.
CREATE INDEX "text_requests_unfinished_idx" ON "text_requests" ("next_attempt_at") WHERE "state" = 'reserving';
CREATE INDEX "text_requests_finished_idx" ON "text_requests" ("completed_at") WHERE "state" IN ('completed', 'failed');
