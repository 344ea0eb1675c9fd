-- Issue 47: an organization's ledger is paged by (created_at, id), not by the id sequence alone
-- (docs/scale.md). Expands only.
-- CreateIndex
CREATE INDEX "ledger_entries_organization_id_created_at_id_idx" ON "ledger_entries"("organization_id", "created_at", "id");
