-- CreateTable
CREATE TABLE "request_log" (
    "hold_id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "key_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "completed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "endpoint" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "status" SMALLINT NOT NULL,
    "succeeded" BOOLEAN NOT NULL,
    "input_tokens" INTEGER,
    "output_tokens" INTEGER,
    "unit" TEXT,
    "quantity" BIGINT,
    "estimated_cost" BIGINT NOT NULL,
    "cost" BIGINT NOT NULL,
    "latency_ms" INTEGER NOT NULL,
    "upstream_latency_ms" INTEGER,
    "request_id" TEXT,
    "idempotency_key" TEXT,

    CONSTRAINT "request_log_pkey" PRIMARY KEY ("hold_id")
);

-- CreateIndex
CREATE INDEX "request_log_key_id_created_at_hold_id_model_status_succeede_idx" ON "request_log"("key_id", "created_at" DESC, "hold_id" DESC, "model", "status", "succeeded");

-- CreateIndex
CREATE INDEX "request_log_organization_id_created_at_hold_id_key_id_model_idx" ON "request_log"("organization_id", "created_at" DESC, "hold_id" DESC, "key_id", "model", "status", "succeeded");

-- CreateIndex
CREATE INDEX "request_log_organization_id_model_created_at_hold_id_key_id_idx" ON "request_log"("organization_id", "model", "created_at" DESC, "hold_id" DESC, "key_id", "status", "succeeded");

-- CreateIndex
CREATE INDEX "request_log_created_at_idx" ON "request_log" USING BRIN ("created_at");
