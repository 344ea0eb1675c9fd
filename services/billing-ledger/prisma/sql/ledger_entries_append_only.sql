-- ledger_entries_append_only: the ledger is the books' history, so the database itself refuses to change
-- or delete an entry, whatever the application does; a correction is a new entry. Called by the trigger
-- ledger_entries_no_update_or_delete, which
-- services/billing-ledger/prisma/migrations/20261122081800_money_invariants_and_hold_ops/migration.sql made.
CREATE OR REPLACE FUNCTION ledger_entries_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger_entries is append-only';
END $$;
