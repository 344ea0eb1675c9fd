-- Optional per-provider `tpm` caps (docs/api.md, "Several providers per model"): the tokens sent to a
-- provider in one clock minute by every text process together, each request counted at its estimate
-- when it is sent and corrected to its usage when it answers.
-- AlterTable
ALTER TABLE "provider_minute_calls" ADD COLUMN "tokens" BIGINT NOT NULL DEFAULT 0;
