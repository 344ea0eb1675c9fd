-- CreateTable
CREATE TABLE "tool_call_leases" (
    "id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "process_id" UUID NOT NULL,
    "tool" TEXT NOT NULL,
    "acquired_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "tool_call_leases_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "tool_call_leases_organization_id_expires_at_idx" ON "tool_call_leases"("organization_id", "expires_at");
