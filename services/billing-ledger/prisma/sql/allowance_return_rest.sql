-- allowance_return_rest: a closed allowance ends once billing has recorded every request its holder
-- placed on it (consumed = closing_used); what its requests did not take (amount - consumed) goes back
-- to the key and the organization in one `release` entry that carries the close's reason. Called by
-- allowance_close (services/billing-ledger/prisma/sql/allowance_close.sql) when the close arrives last,
-- and by allowance_spend (services/billing-ledger/prisma/sql/allowance_spend.sql) when the last
-- request's command does; p_allowance is the allowance's row as it is now, locked.
CREATE OR REPLACE FUNCTION allowance_return_rest(p_allowance holds, p_reason text, p_now timestamptz)
RETURNS holds
LANGUAGE plpgsql AS $$
DECLARE
  v_rest bigint := hold_reserves(p_allowance);
  v_after holds%ROWTYPE;
  v_org record;
BEGIN
  UPDATE holds h SET status = 'released', resolved_at = p_now
  WHERE h.organization_id = p_allowance.organization_id AND h.id = p_allowance.id RETURNING * INTO v_after;
  UPDATE api_keys k SET reserved = k.reserved - v_rest WHERE k.organization_id = p_allowance.organization_id AND k.id = p_allowance.key_id;
  UPDATE organizations o SET reserved = o.reserved - v_rest WHERE o.id = p_allowance.organization_id
    RETURNING o.balance, o.reserved INTO v_org;
  INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after, reference, created_at)
  VALUES (p_allowance.organization_id, p_allowance.key_id, p_allowance.id, 'release', v_rest, v_org.balance, v_org.reserved,
          p_reason, p_now);
  RETURN v_after;
END $$;
