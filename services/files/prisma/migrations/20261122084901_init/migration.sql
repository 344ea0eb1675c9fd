-- CreateEnum
CREATE TYPE "file_status" AS ENUM ('awaiting_upload', 'uploading', 'uploaded', 'verifying', 'verified', 'rejected', 'deleted', 'expired');

-- CreateEnum
CREATE TYPE "file_purpose" AS ENUM ('upload', 'job_result');

-- CreateEnum
CREATE TYPE "rejection_code" AS ENUM ('upload_missing', 'size_mismatch', 'checksum_mismatch', 'mime_mismatch', 'malware_detected');

-- CreateTable
CREATE TABLE "files" (
    "id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "purpose" "file_purpose" NOT NULL,
    "job_id" TEXT,
    "filename" TEXT NOT NULL,
    "mime_type" TEXT NOT NULL,
    "size_bytes" BIGINT NOT NULL,
    "sha256" TEXT NOT NULL,
    "status" "file_status" NOT NULL,
    "rejection_code" "rejection_code",
    "rejection_detail" TEXT,
    "object_key" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "upload_expires_at" TIMESTAMPTZ(3),
    "upload_started_at" TIMESTAMPTZ(3),
    "uploaded_at" TIMESTAMPTZ(3),
    "verification_requested_at" TIMESTAMPTZ(3),
    "verified_at" TIMESTAMPTZ(3),
    "rejected_at" TIMESTAMPTZ(3),
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "removed_at" TIMESTAMPTZ(3),
    "object_purged_at" TIMESTAMPTZ(3),

    CONSTRAINT "files_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "outbox_messages" (
    "id" BIGSERIAL NOT NULL,
    "message_id" UUID NOT NULL,
    "routing_key" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "published_at" TIMESTAMPTZ(3),
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "available_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "outbox_messages_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "files_job_id_key" ON "files"("job_id");

-- CreateIndex
CREATE INDEX "files_user_id_created_at_id_idx" ON "files"("user_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "files_status_expires_at_idx" ON "files"("status", "expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "outbox_messages_message_id_key" ON "outbox_messages"("message_id");

-- CreateIndex
CREATE INDEX "outbox_messages_published_at_available_at_id_idx" ON "outbox_messages"("published_at", "available_at", "id");
