-- 1.1.0's billing-ledger records a webhook delivery attempt from its own code (Prisma), without the
-- organization, and its pods still run on this schema during the upgrade and after a rollback: the
-- column stays nullable in this release (expand). This release always writes it; the release after
-- fills what a 1.1.0 pod left empty from the delivery and sets NOT NULL (the contract).
-- AlterTable
ALTER TABLE "webhook_delivery_attempts" ALTER COLUMN "organization_id" DROP NOT NULL;
