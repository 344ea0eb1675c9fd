-- AlterTable
ALTER TABLE "text_requests" ADD COLUMN     "request_id" TEXT;
