-- CreateEnum
CREATE TYPE "text_request_state" AS ENUM ('reserving', 'running', 'settling', 'releasing', 'completed', 'failed');

-- CreateTable
CREATE TABLE "text_requests" (
    "id" UUID NOT NULL,
    "key_id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "endpoint" TEXT NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "plan" JSONB NOT NULL,
    "estimated_cost" BIGINT NOT NULL,
    "hold_id" UUID NOT NULL,
    "state" "text_request_state" NOT NULL,
    "result" JSONB,
    "cost" BIGINT,
    "error" JSONB,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "owner_id" UUID,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "text_requests_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "workers" (
    "id" UUID NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workers_pkey" PRIMARY KEY ("id")
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
CREATE INDEX "text_requests_state_next_attempt_at_idx" ON "text_requests"("state", "next_attempt_at");

-- CreateIndex
CREATE INDEX "text_requests_completed_at_idx" ON "text_requests"("completed_at");

-- CreateIndex
CREATE UNIQUE INDEX "text_requests_key_id_endpoint_idempotency_key_key" ON "text_requests"("key_id", "endpoint", "idempotency_key");

-- CreateIndex
CREATE UNIQUE INDEX "outbox_messages_message_id_key" ON "outbox_messages"("message_id");

-- CreateIndex
CREATE INDEX "outbox_messages_published_at_available_at_id_idx" ON "outbox_messages"("published_at", "available_at", "id");
