-- A job result's reading right (the job's operation scope). Results stored before have none: they
-- stay readable with `files:read` only.
ALTER TABLE "files" ADD COLUMN "read_scope" TEXT;
