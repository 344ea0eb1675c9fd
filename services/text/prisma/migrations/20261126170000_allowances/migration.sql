-- Allowances (docs/api.md, "Allowances"): holds billing grants this service ahead of requests, on which
-- each request's hold is placed here, in its claim's commit.
CREATE TYPE "allowance_state" AS ENUM ('granting', 'open', 'closing', 'closed');

CREATE TABLE "allowances" (
    "id" UUID NOT NULL,
    "key_id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "owner_id" UUID NOT NULL,
    "state" "allowance_state" NOT NULL,
    "granted" BIGINT NOT NULL DEFAULT 0,
    "used" BIGINT NOT NULL DEFAULT 0,
    "requests" INTEGER NOT NULL DEFAULT 0,
    "usable_until" TIMESTAMPTZ(3),
    "last_used_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "closed_at" TIMESTAMPTZ(3),

    CONSTRAINT "allowances_pkey" PRIMARY KEY ("id"),
    -- Never more placed on an allowance than billing granted: the last line of the escrow's rule.
    CONSTRAINT "allowances_used_within_granted" CHECK ("used" >= 0 AND "used" <= "granted")
);

CREATE INDEX "allowances_state_idx" ON "allowances"("state");

ALTER TABLE "text_requests" ADD COLUMN "allowance_id" UUID;

-- Closing an allowance asks whether any request on it is still unfinished: a partial index keeps that cheap.
CREATE INDEX "text_requests_unfinished_on_allowance_idx" ON "text_requests" ("allowance_id") WHERE "state" = 'reserving' AND "allowance_id" IS NOT NULL;
