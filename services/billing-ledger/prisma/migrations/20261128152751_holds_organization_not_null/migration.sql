-- Every hold names its organization (issue 47: the per-organization tables are keyed by it). A release
-- of a hold billing never saw (a tombstone: no key) now carries the organization of the hold's key and
-- is recorded under it. A hold with a key whose organization is missing takes it from the key; the
-- tombstones written before this change have no key and no organization to take, so they go: each
-- moved no money (no ledger entry names one), and a placement of such an id that still arrived would be
-- an active hold whose owner's record is final, which the hold audit resolves on the owner's word.
UPDATE "holds" h SET "organization_id" = k."organization_id"
FROM "api_keys" k
WHERE h."organization_id" IS NULL AND h."key_id" = k."id";

DELETE FROM "holds" h
WHERE h."organization_id" IS NULL AND h."key_id" IS NULL
  AND NOT EXISTS (SELECT 1 FROM "ledger_entries" l WHERE l."hold_id" = h."id");

-- AlterTable
ALTER TABLE "holds" ALTER COLUMN "organization_id" SET NOT NULL;
