-- DropForeignKey
ALTER TABLE "holds" DROP CONSTRAINT "holds_allowance_id_fkey";

-- DropForeignKey
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_endpoint_id_fkey";

-- DropForeignKey
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_event_id_fkey";

-- DropForeignKey
ALTER TABLE "webhook_delivery_attempts" DROP CONSTRAINT "webhook_delivery_attempts_delivery_id_fkey";

-- DropIndex
DROP INDEX "api_keys_key_hash_key";

-- DropIndex
DROP INDEX "api_keys_organization_id_idx";

-- DropIndex
DROP INDEX "holds_allowance_id_idx";

-- DropIndex
DROP INDEX "ledger_entries_organization_id_id_idx";

-- DropIndex
DROP INDEX "webhook_endpoints_organization_id_idx";

-- AlterTable
ALTER TABLE "api_keys" DROP CONSTRAINT "api_keys_pkey",
ADD CONSTRAINT "api_keys_pkey" PRIMARY KEY ("organization_id", "id");

-- AlterTable
ALTER TABLE "credits" DROP CONSTRAINT "credits_pkey",
ADD CONSTRAINT "credits_pkey" PRIMARY KEY ("organization_id", "id");

-- AlterTable
ALTER TABLE "ledger_entries" DROP CONSTRAINT "ledger_entries_pkey",
ADD CONSTRAINT "ledger_entries_pkey" PRIMARY KEY ("organization_id", "id");

-- AlterTable
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_pkey",
ADD CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("organization_id", "id");

-- AlterTable
ALTER TABLE "webhook_endpoints" DROP CONSTRAINT "webhook_endpoints_pkey",
ADD CONSTRAINT "webhook_endpoints_pkey" PRIMARY KEY ("organization_id", "id");

-- AlterTable
ALTER TABLE "webhook_events" DROP CONSTRAINT "webhook_events_pkey",
ADD CONSTRAINT "webhook_events_pkey" PRIMARY KEY ("organization_id", "id");

-- CreateIndex
CREATE INDEX "api_keys_id_idx" ON "api_keys"("id");

-- CreateIndex
CREATE INDEX "api_keys_key_hash_idx" ON "api_keys"("key_hash");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_organization_id_key_hash_key" ON "api_keys"("organization_id", "key_hash");

-- CreateIndex
CREATE INDEX "holds_organization_id_allowance_id_idx" ON "holds"("organization_id", "allowance_id");

-- CreateIndex
CREATE UNIQUE INDEX "holds_organization_id_id_key" ON "holds"("organization_id", "id");

-- CreateIndex
CREATE INDEX "webhook_deliveries_id_idx" ON "webhook_deliveries"("id");

-- CreateIndex
CREATE UNIQUE INDEX "webhook_events_organization_id_dedupe_key_key" ON "webhook_events"("organization_id", "dedupe_key");

-- AddForeignKey
ALTER TABLE "holds" ADD CONSTRAINT "holds_organization_id_allowance_id_fkey" FOREIGN KEY ("organization_id", "allowance_id") REFERENCES "holds"("organization_id", "id") ON DELETE RESTRICT ON UPDATE RESTRICT;

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_organization_id_endpoint_id_fkey" FOREIGN KEY ("organization_id", "endpoint_id") REFERENCES "webhook_endpoints"("organization_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_organization_id_event_id_fkey" FOREIGN KEY ("organization_id", "event_id") REFERENCES "webhook_events"("organization_id", "id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_delivery_attempts" ADD CONSTRAINT "webhook_delivery_attempts_organization_id_delivery_id_fkey" FOREIGN KEY ("organization_id", "delivery_id") REFERENCES "webhook_deliveries"("organization_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;
