-- AlterTable
ALTER TABLE "users" ADD COLUMN     "last_sign_in_at" TIMESTAMPTZ(3),
ADD COLUMN     "password_hash" TEXT,
ADD COLUMN     "password_set_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "cabinet_invitations" (
    "id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "token_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "cabinet_invitations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "cabinet_sessions" (
    "id" UUID NOT NULL,
    "token_hash" TEXT NOT NULL,
    "user_id" UUID,
    "operator" BOOLEAN NOT NULL DEFAULT false,
    "organization_id" UUID,
    "address" TEXT NOT NULL,
    "user_agent" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "cabinet_sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sign_in_failures" (
    "id" BIGSERIAL NOT NULL,
    "email" TEXT NOT NULL,
    "address" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sign_in_failures_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "cabinet_invitations_token_hash_key" ON "cabinet_invitations"("token_hash");

-- CreateIndex
CREATE INDEX "cabinet_invitations_user_id_idx" ON "cabinet_invitations"("user_id");

-- CreateIndex
CREATE INDEX "cabinet_invitations_created_at_idx" ON "cabinet_invitations"("created_at");

-- CreateIndex
CREATE UNIQUE INDEX "cabinet_sessions_token_hash_key" ON "cabinet_sessions"("token_hash");

-- CreateIndex
CREATE INDEX "cabinet_sessions_user_id_idx" ON "cabinet_sessions"("user_id");

-- CreateIndex
CREATE INDEX "sign_in_failures_email_created_at_idx" ON "sign_in_failures"("email", "created_at");

-- CreateIndex
CREATE INDEX "sign_in_failures_address_created_at_idx" ON "sign_in_failures"("address", "created_at");

-- CreateIndex
CREATE INDEX "sign_in_failures_created_at_idx" ON "sign_in_failures"("created_at");

-- AddForeignKey
ALTER TABLE "cabinet_invitations" ADD CONSTRAINT "cabinet_invitations_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "cabinet_sessions" ADD CONSTRAINT "cabinet_sessions_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "cabinet_sessions" ADD CONSTRAINT "cabinet_sessions_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- A session is the operator's (no user) or a member's (a user), never both nor neither.
ALTER TABLE "cabinet_sessions" ADD CONSTRAINT "cabinet_sessions_role" CHECK ("operator" = ("user_id" IS NULL));

-- The cabinet's spend chart reads an organization's settled holds by budget day. Partial, so the money
-- path pays for it only when it settles a hold, never when it places one.
CREATE INDEX "holds_settled_organization_day_idx" ON "holds" ("organization_id", "budget_day") WHERE status = 'settled';
