-- Issue 47: the unique indexes the after-rollout migration 20261129021100 makes primary keys, built now
-- (expands only). This release's SQL names request_log's in ON CONFLICT; the previous release's pods go
-- on naming (hold_id), whose primary key stays until then (docs/scale.md).

-- CreateIndex: a hold's organization is found by its id (op-organizations.ts, an operator's lookup),
-- which the primary key (organization_id, id) will not serve.
CREATE INDEX "holds_id_idx" ON "holds"("id");

-- CreateIndex
CREATE UNIQUE INDEX "request_log_organization_id_hold_id_key" ON "request_log"("organization_id", "hold_id");

-- CreateIndex
CREATE UNIQUE INDEX "webhook_delivery_attempts_organization_id_id_key" ON "webhook_delivery_attempts"("organization_id", "id");
