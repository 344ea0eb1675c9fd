-- What a file row may never be, whatever the application does.
ALTER TABLE files ADD CONSTRAINT files_size_positive CHECK (size_bytes > 0);
ALTER TABLE files ADD CONSTRAINT files_sha256_hex CHECK (sha256 ~ '^[0-9a-f]{64}$');
-- A rejected file always says why; the reason stays when the file is later deleted or expires.
ALTER TABLE files ADD CONSTRAINT files_rejected_has_code CHECK (status <> 'rejected' OR rejection_code IS NOT NULL);
ALTER TABLE files ADD CONSTRAINT files_code_only_when_rejected
  CHECK (rejection_code IS NULL OR status IN ('rejected', 'deleted', 'expired'));
-- Job results carry their job and have no upload link; uploads the other way round.
ALTER TABLE files ADD CONSTRAINT files_job_result_shape CHECK (
  (purpose = 'job_result' AND job_id IS NOT NULL AND upload_expires_at IS NULL)
  OR (purpose = 'upload' AND job_id IS NULL AND upload_expires_at IS NOT NULL));
ALTER TABLE files ADD CONSTRAINT files_removed_iff_gone CHECK ((status IN ('deleted', 'expired')) = (removed_at IS NOT NULL));

-- The quota sums a user's live uploads on every create.
CREATE INDEX files_user_live_uploads_idx ON files (user_id)
  WHERE purpose = 'upload' AND status NOT IN ('rejected', 'deleted', 'expired');
-- The sweeper finds objects still to delete without scanning every finished file.
CREATE INDEX files_objects_to_purge_idx ON files (id)
  WHERE status IN ('rejected', 'deleted', 'expired') AND object_purged_at IS NULL;
