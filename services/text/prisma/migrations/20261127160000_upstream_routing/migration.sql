-- Several providers per model (docs/api.md, "Several providers per model"): the provider a request was
-- last sent to (its later attempts go there only) and those that refused it, for the operator.
-- AlterTable
ALTER TABLE "text_requests" ADD COLUMN "provider" TEXT,
ADD COLUMN "providers_refused" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- The circuit breaker of each provider, shared by every text process: consecutive failures, and until
-- when it is not called (cooldown, or the upstream's Retry-After).
-- CreateTable
CREATE TABLE "provider_health" (
    "provider" TEXT NOT NULL,
    "failures" INTEGER NOT NULL DEFAULT 0,
    "open_until" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "provider_health_pkey" PRIMARY KEY ("provider")
);

-- Calls sent to a provider with an `rpm` cap, per minute, by every text process together; rows older
-- than a few minutes are deleted.
-- CreateTable
CREATE TABLE "provider_minute_calls" (
    "provider" TEXT NOT NULL,
    "minute" TIMESTAMPTZ(0) NOT NULL,
    "calls" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "provider_minute_calls_pkey" PRIMARY KEY ("provider","minute")
);
