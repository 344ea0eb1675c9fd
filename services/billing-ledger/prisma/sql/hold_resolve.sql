-- hold_resolve: a hold is resolved exactly once, by settle (its cost is charged on today's budget day and
-- the rest of the reservation freed), release or expiry (all of what it still reserves freed, the reason
-- in the ledger entry); a second resolution is a replay (already) or refused (conflict), and only the
-- service that placed a hold resolves it (foreign). Called by apply_hold_ops
-- (services/billing-ledger/prisma/sql/apply_hold_ops.sql) for a settle, release or expire without
-- `allowance`; a release with used_microrub closes an allowance (allowance_close).
--
-- What a hold still reserves: all of a request's hold, an allowance's amount - consumed. A release or an
-- expiry of an allowance thus frees the rest at once; a request's command that arrives after that is a
-- conflict (allowance_spend). An allowance is never settled itself: its requests are.
-- p_org is the batch's organization: only its holds are read and written. A release of an id billing
-- never saw is recorded (a tombstone: no key) under it; without one (an op whose organization billing
-- could not tell), with an organization billing does not have, or for an id another organization holds,
-- it is not_found.
-- Outcomes: settled | released | released_unplaced | expired | closing | already | conflict |
-- exceeds_hold | not_found | foreign.
DROP FUNCTION IF EXISTS hold_resolve(text, uuid, bigint, text, bigint, text, timestamptz, date);
CREATE OR REPLACE FUNCTION hold_resolve(p_op text, p_hold_id uuid, p_org uuid, p_amount bigint, p_reason text, p_used bigint,
                                        p_source text, p_now timestamptz, p_day date,
                                        OUT o_outcome text, OUT o_hold holds, OUT o_retry_after boolean)
LANGUAGE plpgsql AS $$
DECLARE
  v_hold holds%ROWTYPE;
  v_rest bigint;
  v_org record;
  v_closed record;
BEGIN
  SELECT * INTO v_hold FROM holds h WHERE h.organization_id = p_org AND h.id = p_hold_id FOR UPDATE;
  IF NOT FOUND AND p_op = 'release' AND p_org IS NOT NULL THEN
    -- Released before it was placed (its caller gave up waiting): remember the id, and whose it is, so
    -- a late placement or grant finds it taken. If a placement commits first, release that hold instead.
    INSERT INTO holds (id, organization_id, amount, status, source, reason, created_at, resolved_at)
    SELECT p_hold_id, o.id, 0, 'released', p_source, p_reason, p_now, p_now FROM organizations o WHERE o.id = p_org
    ON CONFLICT DO NOTHING
    RETURNING * INTO o_hold;
    IF FOUND THEN
      o_outcome := 'released_unplaced';
      RETURN;
    END IF;
    SELECT * INTO v_hold FROM holds h WHERE h.organization_id = p_org AND h.id = p_hold_id FOR UPDATE;
  END IF;

  IF v_hold.id IS NULL THEN
    o_outcome := 'not_found';
    RETURN;
  END IF;
  o_hold := v_hold;
  IF p_source IS NOT NULL AND v_hold.key_id IS NOT NULL AND v_hold.source IS DISTINCT FROM p_source THEN
    -- Only the service that placed a hold resolves it: another one's command moves no money.
    o_outcome := 'foreign';
  ELSIF p_op = 'release' AND p_used IS NOT NULL THEN
    v_closed := allowance_close(v_hold, p_used, p_reason, p_now);
    o_outcome := v_closed.o_outcome;
    o_hold := v_closed.o_hold;
  ELSIF v_hold.status <> 'active' THEN
    o_outcome := CASE
      WHEN p_op = 'settle' AND v_hold.status = 'settled' AND v_hold.settled = p_amount THEN 'already'
      WHEN p_op IN ('release', 'expire') AND v_hold.status IN ('released', 'expired') THEN 'already'
      ELSE 'conflict'
    END;
  ELSIF p_op = 'release' AND v_hold.closing_used IS NOT NULL THEN
    -- Closed by its holder and waiting for its requests' commands: only they (or the expiry) end it.
    o_outcome := 'conflict';
  ELSIF p_op = 'settle' AND v_hold.kind = 'allowance' THEN
    o_outcome := 'conflict';
  ELSIF p_op = 'settle' AND p_amount > v_hold.amount THEN
    o_outcome := 'exceeds_hold';
  ELSE
    v_rest := hold_reserves(v_hold);
    UPDATE holds h SET
      status = CASE p_op WHEN 'settle' THEN 'settled'::hold_status WHEN 'release' THEN 'released'::hold_status ELSE 'expired'::hold_status END,
      settled = CASE WHEN p_op = 'settle' THEN p_amount END,
      budget_day = CASE WHEN p_op = 'settle' THEN p_day END,
      reason = COALESCE(p_reason, h.reason),
      resolved_at = p_now
    WHERE h.organization_id = p_org AND h.id = v_hold.id
    RETURNING * INTO o_hold;
    UPDATE api_keys k SET reserved = k.reserved - v_rest WHERE k.organization_id = p_org AND k.id = v_hold.key_id;
    IF p_op = 'settle' AND p_amount > 0 THEN
      INSERT INTO key_daily_usage AS u (organization_id, key_id, day, spent) VALUES (v_hold.organization_id, v_hold.key_id, p_day, p_amount)
      ON CONFLICT (organization_id, key_id, day) DO UPDATE SET spent = u.spent + EXCLUDED.spent;
    END IF;
    UPDATE organizations o SET
      balance = o.balance - CASE WHEN p_op = 'settle' THEN p_amount ELSE 0 END,
      reserved = o.reserved - v_rest
    WHERE o.id = p_org
    RETURNING o.balance, o.reserved INTO v_org;
    -- A release or an expiry says why in its ledger entry.
    INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after, reference, created_at)
    VALUES (v_hold.organization_id, v_hold.key_id, v_hold.id, p_op::ledger_kind,
            CASE WHEN p_op = 'settle' THEN p_amount ELSE v_rest END, v_org.balance, v_org.reserved,
            CASE WHEN p_op = 'settle' THEN NULL ELSE p_reason END, p_now);
    o_outcome := CASE p_op WHEN 'settle' THEN 'settled' WHEN 'release' THEN 'released' ELSE 'expired' END;
  END IF;
END $$;
