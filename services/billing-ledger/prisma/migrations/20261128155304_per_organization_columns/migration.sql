-- Issue 47: every per-organization table names its organization, in its keys too (docs/scale.md).
-- key_daily_usage, webhook_deliveries and webhook_delivery_attempts get organization_id, backfilled from
-- the key, the endpoint and the delivery; key_daily_usage is keyed by (organization_id, key_id, day) and a
-- delivery is unique per (organization_id, endpoint_id, event_id). cabinet_sessions (kept on one node)
-- no longer points at organizations by a foreign key: the member's choice is checked against their
-- memberships where it is made.

-- DropForeignKey
ALTER TABLE "cabinet_sessions" DROP CONSTRAINT "cabinet_sessions_organization_id_fkey";

-- key_daily_usage
ALTER TABLE "key_daily_usage" ADD COLUMN "organization_id" UUID;
UPDATE "key_daily_usage" u SET "organization_id" = k."organization_id" FROM "api_keys" k WHERE k."id" = u."key_id";
ALTER TABLE "key_daily_usage" ALTER COLUMN "organization_id" SET NOT NULL,
DROP CONSTRAINT "key_daily_usage_pkey",
ADD CONSTRAINT "key_daily_usage_pkey" PRIMARY KEY ("organization_id", "key_id", "day");

-- webhook_deliveries
ALTER TABLE "webhook_deliveries" ADD COLUMN "organization_id" UUID;
UPDATE "webhook_deliveries" d SET "organization_id" = e."organization_id" FROM "webhook_endpoints" e WHERE e."id" = d."endpoint_id";
ALTER TABLE "webhook_deliveries" ALTER COLUMN "organization_id" SET NOT NULL;
DROP INDEX "webhook_deliveries_endpoint_id_event_id_key";
CREATE UNIQUE INDEX "webhook_deliveries_organization_id_endpoint_id_event_id_key" ON "webhook_deliveries"("organization_id", "endpoint_id", "event_id");

-- webhook_delivery_attempts
ALTER TABLE "webhook_delivery_attempts" ADD COLUMN "organization_id" UUID;
UPDATE "webhook_delivery_attempts" a SET "organization_id" = d."organization_id" FROM "webhook_deliveries" d WHERE d."id" = a."delivery_id";
ALTER TABLE "webhook_delivery_attempts" ALTER COLUMN "organization_id" SET NOT NULL;
