-- DropIndex
DROP INDEX "files_status_expires_at_idx";

-- AlterTable
ALTER TABLE "files" ADD COLUMN     "upload_attempt_id" UUID,
ADD COLUMN     "upload_lease_expires_at" TIMESTAMPTZ(3),
ADD COLUMN     "upload_streamer" TEXT;

-- Rows claimed `uploading` by an older version (before or during the rollout) have no attempt and no
-- lease: nothing vouches for their streamer, so they count and show only while their link lives, and
-- are never taken over (their streamer holds no lock and writes the file's first object key).

-- The retention sweeper's queries, each served by a partial index that leaves out the finished rows
-- (deleted, expired), which pile up for ever: a sweep costs what is due, not what is kept.
-- Retention: live files by expiry.
CREATE INDEX files_live_expires_at_idx ON files (expires_at) WHERE status NOT IN ('deleted', 'expired');
-- Upload links that die: files still waiting for their bytes, or streaming them, by link expiry.
CREATE INDEX files_open_uploads_idx ON files (upload_expires_at) WHERE status IN ('awaiting_upload', 'uploading');
-- Verifications to send again.
CREATE INDEX files_verifying_idx ON files (verification_requested_at) WHERE status = 'verifying';
