-- The restore point (the books cross-check and the hold audit, docs/api.md): one row per database this
-- service ran on, by the database's OID. A restore from a backup (pg_restore into a freshly created
-- database) brings back the old rows under a new OID, so the service knows it was restored, and since when.
-- CreateTable
CREATE TABLE "database_incarnations" (
    "db_oid" BIGINT NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "database_incarnations_pkey" PRIMARY KEY ("db_oid")
);
