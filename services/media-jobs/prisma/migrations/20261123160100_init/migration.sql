-- CreateEnum
CREATE TYPE "media_job_state" AS ENUM ('reserving', 'queued', 'running', 'succeeded', 'failed');

-- CreateTable
CREATE TABLE "media_jobs" (
    "id" UUID NOT NULL,
    "key_id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "endpoint" TEXT NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    "request_id" TEXT,
    "fingerprint" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "plan" TEXT NOT NULL,
    "estimated_cost" BIGINT NOT NULL,
    "hold_id" UUID NOT NULL,
    "state" "media_job_state" NOT NULL,
    "progress" TEXT NOT NULL,
    "result" TEXT,
    "quantity" INTEGER,
    "cost" BIGINT,
    "error" TEXT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "owner_id" UUID,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "queued_at" TIMESTAMPTZ(3),
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "media_jobs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "outbox_messages" (
    "id" BIGSERIAL NOT NULL,
    "message_id" UUID NOT NULL,
    "routing_key" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "published_at" TIMESTAMPTZ(3),
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "available_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "outbox_messages_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "media_jobs_user_id_created_at_id_idx" ON "media_jobs"("user_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "outbox_messages_message_id_key" ON "outbox_messages"("message_id");

-- CreateIndex
CREATE INDEX "outbox_messages_published_at_available_at_id_idx" ON "outbox_messages"("published_at", "available_at", "id");

-- The reconciler's query (leases run out, queued jobs no worker took) and the purge, each on a partial
-- index (Prisma cannot declare these): they stay small however many finished jobs there are.
CREATE INDEX "media_jobs_unfinished_idx" ON "media_jobs" ("next_attempt_at") WHERE "state" IN ('reserving', 'queued', 'running');
CREATE INDEX "media_jobs_finished_idx" ON "media_jobs" ("completed_at") WHERE "state" IN ('succeeded', 'failed');
