-- CreateTable
CREATE TABLE "tool_results" (
    "id" UUID NOT NULL,
    "key_id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "tool" TEXT NOT NULL,
    "idempotency_key" TEXT,
    "content" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "tool_results_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "tool_results_key_id_tool_idempotency_key_key" ON "tool_results"("key_id", "tool", "idempotency_key");

-- CreateIndex
CREATE INDEX "tool_results_expires_at_idx" ON "tool_results"("expires_at");
