-- Media on upstream models (docs/api.md, "Media on upstream models"): the provider a job's call was last
-- sent to, those that refused it, and the tokens the upstream reported (the operator's cost).
-- AlterTable
ALTER TABLE "media_jobs" ADD COLUMN     "provider" TEXT,
ADD COLUMN     "providers_refused" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "upstream_usage" TEXT;

-- The upstream providers' circuit breakers and per-minute counts, shared by every media-jobs process.
-- CreateTable
CREATE TABLE "provider_health" (
    "provider" TEXT NOT NULL,
    "failures" INTEGER NOT NULL DEFAULT 0,
    "open_until" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "provider_health_pkey" PRIMARY KEY ("provider")
);

-- CreateTable
CREATE TABLE "provider_minute_calls" (
    "provider" TEXT NOT NULL,
    "minute" TIMESTAMPTZ(0) NOT NULL,
    "calls" INTEGER NOT NULL DEFAULT 0,
    "tokens" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "provider_minute_calls_pkey" PRIMARY KEY ("provider","minute")
);
