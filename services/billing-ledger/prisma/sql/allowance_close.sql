-- allowance_close: the holder closes an allowance with a release naming used_microrub, the estimates of
-- every request it placed on it, all of them final. Their commands may still be on the way, so the
-- close is recorded (closing_used) and the rest is returned (allowance_return_rest) only once consumed
-- reaches used: now, or when the last request's command arrives (allowance_spend). Called by
-- hold_resolve (services/billing-ledger/prisma/sql/hold_resolve.sql) for a release with used_microrub,
-- after it found the hold, locked it and checked its owner.
--
-- Outcomes: released (nothing left to wait for) | closing (waits for its requests' commands) |
-- already (the same close again, or the allowance already ended) | conflict (not an allowance, another
-- close, or a used figure the allowance cannot have).
CREATE OR REPLACE FUNCTION allowance_close(p_hold holds, p_used bigint, p_reason text, p_now timestamptz,
                                           OUT o_outcome text, OUT o_hold holds, OUT o_retry_after boolean)
LANGUAGE plpgsql AS $$
BEGIN
  o_hold := p_hold;
  o_outcome := CASE
    WHEN p_hold.kind <> 'allowance' THEN 'conflict'
    WHEN p_hold.closing_used IS NOT NULL THEN CASE WHEN p_hold.closing_used = p_used THEN 'already' ELSE 'conflict' END
    WHEN p_hold.status IN ('released', 'expired') THEN 'already'
    WHEN p_hold.status <> 'active' OR p_used > p_hold.amount OR p_used < p_hold.consumed THEN 'conflict'
  END;
  IF o_outcome IS NOT NULL THEN
    RETURN;
  END IF;
  UPDATE holds h SET closing_used = p_used, reason = p_reason
  WHERE h.organization_id = p_hold.organization_id AND h.id = p_hold.id RETURNING * INTO o_hold;
  o_outcome := 'closing';
  IF o_hold.consumed = o_hold.closing_used THEN
    o_hold := allowance_return_rest(o_hold, p_reason, p_now);
    o_outcome := 'released';
  END IF;
END $$;
