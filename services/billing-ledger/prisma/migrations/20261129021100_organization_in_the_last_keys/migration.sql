-- Issue 47, after the rollout (after-rollout.md): the last keys without the organization. The unique
-- indexes with it exist already (holds since 20261128201838, the others since 20261129021000) and
-- become the primary keys; nothing is rebuilt but what NOT NULL checks.

-- holds: keyed by (organization_id, id). The allowance foreign key already points at (organization_id, id).
ALTER TABLE "holds" DROP CONSTRAINT "holds_pkey";
ALTER TABLE "holds" ADD CONSTRAINT "holds_pkey" PRIMARY KEY USING INDEX "holds_organization_id_id_key";

-- webhook_events: a dedupe key is unique within its organization (webhook_events_organization_id_dedupe_key_key).
DROP INDEX "webhook_events_dedupe_key_key";

-- request_log: keyed by (organization_id, hold_id).
ALTER TABLE "request_log" DROP CONSTRAINT "request_log_pkey";
ALTER TABLE "request_log" ADD CONSTRAINT "request_log_pkey" PRIMARY KEY USING INDEX "request_log_organization_id_hold_id_key";

-- webhook_delivery_attempts: the previous release recorded attempts without organization_id. Those
-- take their delivery's; an attempt whose delivery is gone (no foreign key held it) goes with it.
UPDATE "webhook_delivery_attempts" a SET "organization_id" = d."organization_id"
  FROM "webhook_deliveries" d
  WHERE a."organization_id" IS NULL AND d."id" = a."delivery_id";
DELETE FROM "webhook_delivery_attempts" WHERE "organization_id" IS NULL;
ALTER TABLE "webhook_delivery_attempts" ALTER COLUMN "organization_id" SET NOT NULL;
ALTER TABLE "webhook_delivery_attempts" DROP CONSTRAINT "webhook_delivery_attempts_pkey";
ALTER TABLE "webhook_delivery_attempts" ADD CONSTRAINT "webhook_delivery_attempts_pkey" PRIMARY KEY USING INDEX "webhook_delivery_attempts_organization_id_id_key";
