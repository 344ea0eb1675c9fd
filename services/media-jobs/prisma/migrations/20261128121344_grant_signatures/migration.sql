-- AlterTable
ALTER TABLE "media_jobs" ADD COLUMN     "grant_signature" TEXT;
