-- Issue 47: key lookup by hash through a small table (key_hash, key_id, organization_id), a reference
-- table on Citus (docs/scale.md), written with each key; every key made before is copied in. Expands only:
-- a key made by the previous release meanwhile is still found by api_keys.key_hash.
-- CreateTable
CREATE TABLE "api_key_hashes" (
    "key_hash" TEXT NOT NULL,
    "key_id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,

    CONSTRAINT "api_key_hashes_pkey" PRIMARY KEY ("key_hash")
);

INSERT INTO "api_key_hashes" ("key_hash", "key_id", "organization_id")
SELECT "key_hash", "id", "organization_id" FROM "api_keys";
