-- CreateIndex
CREATE INDEX "api_key_hashes_key_id_idx" ON "api_key_hashes"("key_id");
