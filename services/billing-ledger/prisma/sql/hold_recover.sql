-- hold_recover: after a restore, a hold its owner settled (its signed final record says so) that billing
-- has no record of is placed and settled in one step, booked on the day the owner settled it, whatever
-- the balance: a charge the client was told of is owed even below zero (docs/api.md, "Backups and the
-- books cross-check"). Called by apply_hold_ops (services/billing-ledger/prisma/sql/apply_hold_ops.sql)
-- for the books cross-check's {op: "recover"}
-- (services/billing-ledger/src/holds/books-cross-check.service.ts), which first checked billing's
-- signature of the grant that covers the record (holds/grant-signatures.ts).
--
-- A request placed on an allowance billing has no open record of is recovered as a hold of its own,
-- marked with that allowance (recovered_allowance_id): the allowance's requests, those billing recorded
-- on it and those recovered, never take more than p_allowance_amount, the amount of its signed grant.
-- p_allowance_amount NULL (an operator's repair by hand) marks it without that bound. p_reference is the
-- ledger entries' reference ('recovered' when NULL).
--
-- Outcomes: recovered | already (recovered before, with the same charge) | conflict (billing has the
-- hold otherwise: it stands) | invalid_key (the key is not the organization's) | exceeds_allowance (the
-- allowance's signed amount does not cover it: nothing moves). p_organization_id is the batch's
-- organization: only its rows are read and written (an id another organization holds is a conflict).
DROP FUNCTION IF EXISTS hold_recover(uuid, uuid, uuid, bigint, bigint, text, text, text, text, timestamptz, text);
CREATE OR REPLACE FUNCTION hold_recover(p_hold_id uuid, p_key_id uuid, p_organization_id uuid, p_amount bigint, p_settled bigint,
                                        p_operation text, p_model text, p_source text, p_owner_ref text,
                                        p_settled_at timestamptz, p_tz text, p_allowance_id uuid, p_allowance_amount bigint,
                                        p_reference text,
                                        OUT o_outcome text, OUT o_hold holds, OUT o_retry_after boolean)
LANGUAGE plpgsql AS $$
DECLARE
  v_hold holds%ROWTYPE;
  v_org record;
BEGIN
  SELECT * INTO v_hold FROM holds h WHERE h.organization_id = p_organization_id AND h.id = p_hold_id FOR UPDATE;
  IF FOUND THEN
    o_outcome := CASE WHEN v_hold.status = 'settled' AND v_hold.settled = p_settled THEN 'already' ELSE 'conflict' END;
    o_hold := v_hold;
    RETURN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.id = p_key_id AND k.organization_id = p_organization_id) THEN
    o_outcome := 'invalid_key';
    RETURN;
  END IF;
  -- The organization's lock (hold_ops_lock) keeps two recoveries on one allowance from both fitting.
  IF p_allowance_amount IS NOT NULL
     AND COALESCE((SELECT a.consumed FROM holds a WHERE a.organization_id = p_organization_id AND a.id = p_allowance_id AND a.kind = 'allowance'), 0)
         + COALESCE((SELECT sum(r.amount) FROM holds r WHERE r.organization_id = p_organization_id AND r.recovered_allowance_id = p_allowance_id), 0)
         + p_amount > p_allowance_amount THEN
    o_outcome := 'exceeds_allowance';
    RETURN;
  END IF;

  INSERT INTO holds (id, organization_id, key_id, amount, settled, status, operation, model, source, owner_ref,
                     budget_day, reason, created_at, resolved_at, recovered_allowance_id)
  VALUES (p_hold_id, p_organization_id, p_key_id, p_amount, p_settled, 'settled', p_operation,
          p_model, p_source, p_owner_ref, (p_settled_at AT TIME ZONE p_tz)::date,
          'recovered from its owner''s final record', p_settled_at, p_settled_at, p_allowance_id)
  ON CONFLICT DO NOTHING
  RETURNING * INTO o_hold;
  IF NOT FOUND THEN
    o_outcome := 'conflict';
    RETURN;
  END IF;
  IF p_settled > 0 THEN
    INSERT INTO key_daily_usage AS u (organization_id, key_id, day, spent) VALUES (p_organization_id, p_key_id, o_hold.budget_day, p_settled)
    ON CONFLICT (organization_id, key_id, day) DO UPDATE SET spent = u.spent + EXCLUDED.spent;
  END IF;
  UPDATE organizations o SET balance = o.balance - p_settled,
                             owes = o.owes OR o.balance - p_settled < o.reserved
  WHERE o.id = p_organization_id
  RETURNING o.balance, o.reserved INTO v_org;
  -- Its two entries, on the owner's time: the hold (as if placed then) and its settlement.
  INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after, reference, created_at)
  VALUES (p_organization_id, p_key_id, p_hold_id, 'hold', p_amount, v_org.balance + p_settled, v_org.reserved,
          COALESCE(p_reference, 'recovered'), p_settled_at),
         (p_organization_id, p_key_id, p_hold_id, 'settle', p_settled, v_org.balance, v_org.reserved,
          COALESCE(p_reference, 'recovered'), p_settled_at);
  o_outcome := 'recovered';
END $$;
