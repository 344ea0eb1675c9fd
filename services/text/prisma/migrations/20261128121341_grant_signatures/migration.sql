-- AlterTable
ALTER TABLE "allowances" ADD COLUMN     "grant_signature" TEXT;

-- AlterTable
ALTER TABLE "text_requests" ADD COLUMN     "grant_signature" TEXT;
