-- A key whose expires_at passed is closed by billing (its allowances called back) and shown expired:
-- final like revoked, and refused by apply_hold_ops as any key that is not active (docs/api.md "Changing a key").
-- AlterEnum
ALTER TYPE "api_key_status" ADD VALUE 'expired';
