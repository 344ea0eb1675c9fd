-- AlterTable
ALTER TABLE "holds" ADD COLUMN     "recovered_allowance_id" UUID;

-- Only recovered requests carry it: hold_recover sums them per allowance.
CREATE INDEX "holds_recovered_allowance_idx" ON "holds" ("recovered_allowance_id") WHERE "recovered_allowance_id" IS NOT NULL;
