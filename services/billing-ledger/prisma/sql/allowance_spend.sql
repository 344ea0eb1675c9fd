-- allowance_spend: a request its service placed locally on an allowance reaches billing only with its
-- settle or release, so billing records the request's hold then, already resolved (allowance_id = the
-- allowance, amount = its estimate), moves the estimate out of the allowance (consumed += estimate,
-- reserved -= estimate) and charges the cost on today's budget day: a `hold` entry of the estimate
-- (reserved_after unchanged: the reservation only moved) and its `settle` or `release` entry, as a
-- per-request hold has (docs/api.md, "Allowances"). Called by apply_hold_ops
-- (services/billing-ledger/prisma/sql/apply_hold_ops.sql) for a settle or release naming `allowance`.
--
-- The last request of an allowance its holder closed (allowance_close) returns the allowance's rest.
-- Outcomes: settled | released | already | conflict | exceeds_hold | not_found | foreign (not_found:
-- billing never granted that allowance; conflict: it is not active, or the estimate does not fit it, or
-- another organization holds the request's id). p_org is the batch's organization: only its rows are
-- read and written.
DROP FUNCTION IF EXISTS allowance_spend(text, uuid, jsonb, bigint, text, text, timestamptz, date);
CREATE OR REPLACE FUNCTION allowance_spend(p_org uuid, p_op text, p_hold_id uuid, p_allowance jsonb, p_amount bigint, p_reason text,
                                           p_source text, p_now timestamptz, p_day date,
                                           OUT o_outcome text, OUT o_hold holds, OUT o_retry_after boolean)
LANGUAGE plpgsql AS $$
DECLARE
  v_spend_id uuid := (p_allowance ->> 'allowance_id')::uuid;
  v_estimate bigint := (p_allowance ->> 'reserved_microrub')::bigint;
  v_cost bigint := CASE WHEN p_op = 'settle' THEN p_amount ELSE 0 END;
  v_hold holds%ROWTYPE;
  v_allow holds%ROWTYPE;
  v_org record;
  v_org_after record;
BEGIN
  SELECT * INTO v_hold FROM holds h WHERE h.organization_id = p_org AND h.id = p_hold_id FOR UPDATE;
  IF FOUND THEN
    -- Recorded before: the same resolution is a replay, anything else stands as it was.
    o_outcome := CASE
      WHEN v_hold.allowance_id IS DISTINCT FROM v_spend_id OR v_hold.amount <> v_estimate THEN 'conflict'
      WHEN p_op = 'settle' AND v_hold.status = 'settled' AND v_hold.settled = p_amount THEN 'already'
      WHEN p_op = 'release' AND v_hold.status IN ('released', 'expired') THEN 'already'
      ELSE 'conflict'
    END;
    o_hold := v_hold;
    RETURN;
  END IF;

  SELECT * INTO v_allow FROM holds h WHERE h.organization_id = p_org AND h.id = v_spend_id FOR UPDATE;
  IF NOT FOUND THEN
    o_outcome := 'not_found';
    RETURN;
  ELSIF p_source IS NOT NULL AND v_allow.key_id IS NOT NULL AND v_allow.source IS DISTINCT FROM p_source THEN
    o_outcome := 'foreign';
    RETURN;
  ELSIF v_allow.kind <> 'allowance' OR v_allow.status <> 'active'
        OR v_allow.key_id IS DISTINCT FROM (p_allowance ->> 'key_id')::uuid
        OR v_allow.consumed + v_estimate > LEAST(v_allow.amount, COALESCE(v_allow.closing_used, v_allow.amount)) THEN
    -- Not an allowance that is still open to this request: no money moves (docs/api.md).
    o_outcome := 'conflict';
    RETURN;
  ELSIF v_cost > v_estimate THEN
    o_outcome := 'exceeds_hold';
    RETURN;
  END IF;

  SELECT o.balance, o.reserved INTO v_org FROM organizations o WHERE o.id = p_org;
  INSERT INTO holds (id, organization_id, key_id, amount, settled, status, kind, allowance_id, operation, model, source,
                     owner_ref, budget_day, reason, created_at, resolved_at)
  VALUES (p_hold_id, v_allow.organization_id, v_allow.key_id, v_estimate,
          CASE WHEN p_op = 'settle' THEN v_cost END,
          CASE WHEN p_op = 'settle' THEN 'settled'::hold_status ELSE 'released'::hold_status END,
          'request', v_spend_id, p_allowance ->> 'operation', p_allowance ->> 'model', v_allow.source,
          p_allowance ->> 'owner_ref', CASE WHEN p_op = 'settle' THEN p_day END, p_reason, p_now, p_now)
  ON CONFLICT DO NOTHING
  RETURNING * INTO o_hold;
  IF NOT FOUND THEN
    -- The id is another organization's: nothing moves.
    o_outcome := 'conflict';
    RETURN;
  END IF;
  UPDATE holds h SET consumed = h.consumed + v_estimate WHERE h.organization_id = p_org AND h.id = v_spend_id RETURNING * INTO v_allow;
  UPDATE api_keys k SET reserved = k.reserved - v_estimate WHERE k.organization_id = p_org AND k.id = v_allow.key_id;
  IF v_cost > 0 THEN
    INSERT INTO key_daily_usage AS u (organization_id, key_id, day, spent) VALUES (v_allow.organization_id, v_allow.key_id, p_day, v_cost)
    ON CONFLICT (organization_id, key_id, day) DO UPDATE SET spent = u.spent + EXCLUDED.spent;
  END IF;
  UPDATE organizations o SET balance = o.balance - v_cost, reserved = o.reserved - v_estimate
  WHERE o.id = p_org
  RETURNING o.balance, o.reserved INTO v_org_after;
  -- The request's two entries, as a per-request hold has them: the hold (the reservation moved from
  -- the allowance to it, so reserved_after is what it was), then its settle or release.
  INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after, reference, created_at)
  VALUES (v_allow.organization_id, v_allow.key_id, p_hold_id, 'hold', v_estimate, v_org.balance, v_org.reserved, NULL, p_now),
         (v_allow.organization_id, v_allow.key_id, p_hold_id, p_op::ledger_kind,
          CASE WHEN p_op = 'settle' THEN v_cost ELSE v_estimate END, v_org_after.balance, v_org_after.reserved,
          CASE WHEN p_op = 'settle' THEN NULL ELSE p_reason END, p_now);
  o_outcome := CASE p_op WHEN 'settle' THEN 'settled' ELSE 'released' END;
  -- The last request its holder closed the allowance with: the rest goes back now.
  IF v_allow.closing_used IS NOT NULL AND v_allow.consumed = v_allow.closing_used THEN
    PERFORM allowance_return_rest(v_allow, v_allow.reason, p_now);
  END IF;
END $$;
