-- AlterEnum
BEGIN;
CREATE TYPE "text_request_state_new" AS ENUM ('reserving', 'settling', 'releasing', 'completed', 'failed');
ALTER TABLE "text_requests" ALTER COLUMN "state" TYPE "text_request_state_new" USING ("state"::text::"text_request_state_new");
ALTER TYPE "text_request_state" RENAME TO "text_request_state_old";
ALTER TYPE "text_request_state_new" RENAME TO "text_request_state";
DROP TYPE "public"."text_request_state_old";
COMMIT;
