-- DropIndex
DROP INDEX "request_log_key_id_created_at_hold_id_model_status_succeede_idx";

-- DropIndex
DROP INDEX "request_log_organization_id_created_at_hold_id_key_id_model_idx";

-- DropIndex
DROP INDEX "request_log_organization_id_model_created_at_hold_id_key_id_idx";

-- AlterTable
ALTER TABLE "request_log" ADD COLUMN     "count" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "error_code" TEXT,
ADD COLUMN     "error_message" TEXT,
ADD COLUMN     "refused" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "xid" BIGINT NOT NULL DEFAULT ((pg_current_xact_id())::text)::bigint,
ALTER COLUMN "model" DROP NOT NULL;

-- CreateTable
CREATE TABLE "request_log_hourly" (
    "organization_id" UUID NOT NULL,
    "hour" TIMESTAMPTZ(3) NOT NULL,
    "key_id" UUID NOT NULL,
    "model" TEXT NOT NULL,
    "succeeded" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    "refused" INTEGER NOT NULL DEFAULT 0,
    "input_tokens" BIGINT NOT NULL DEFAULT 0,
    "output_tokens" BIGINT NOT NULL DEFAULT 0,
    "quantity" BIGINT NOT NULL DEFAULT 0,
    "cost" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "request_log_hourly_pkey" PRIMARY KEY ("organization_id","hour","key_id","model")
);

-- CreateTable
CREATE TABLE "request_log_daily" (
    "organization_id" UUID NOT NULL,
    "day" DATE NOT NULL,
    "key_id" UUID NOT NULL,
    "model" TEXT NOT NULL,
    "succeeded" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    "refused" INTEGER NOT NULL DEFAULT 0,
    "input_tokens" BIGINT NOT NULL DEFAULT 0,
    "output_tokens" BIGINT NOT NULL DEFAULT 0,
    "quantity" BIGINT NOT NULL DEFAULT 0,
    "cost" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "request_log_daily_pkey" PRIMARY KEY ("organization_id","day","key_id","model")
);

-- CreateTable
CREATE TABLE "request_log_rollup" (
    "id" SMALLINT NOT NULL,
    "next_xid" BIGINT NOT NULL,

    CONSTRAINT "request_log_rollup_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "request_log_hourly_key_id_hour_idx" ON "request_log_hourly"("key_id", "hour");

-- CreateIndex
CREATE INDEX "request_log_daily_key_id_day_idx" ON "request_log_daily"("key_id", "day");

-- CreateIndex
CREATE INDEX "request_log_key_id_created_at_hold_id_model_status_succeede_idx" ON "request_log"("key_id", "created_at" DESC, "hold_id" DESC, "model", "status", "succeeded", "refused");

-- CreateIndex
CREATE INDEX "request_log_organization_id_created_at_hold_id_key_id_model_idx" ON "request_log"("organization_id", "created_at" DESC, "hold_id" DESC, "key_id", "model", "status", "succeeded", "refused");

-- CreateIndex
CREATE INDEX "request_log_organization_id_model_created_at_hold_id_key_id_idx" ON "request_log"("organization_id", "model", "created_at" DESC, "hold_id" DESC, "key_id", "status", "succeeded", "refused");

-- CreateIndex
CREATE INDEX "request_log_xid_idx" ON "request_log"("xid");

-- A key's refusal entries of an hour, counted against its bound (request_log_record_refusals.sql);
-- partial, so the count never reads the key's paid rows. Prisma cannot declare it.
CREATE INDEX "request_log_refused_key_id_created_at_idx" ON "request_log"("key_id", "created_at") WHERE "refused";
