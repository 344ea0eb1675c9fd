-- allowance_grant: an allowance is a hold of kind 'allowance' that a service process spends locally, one
-- request's estimate at a time (docs/api.md, "Allowances"). It is granted at most a share of what the
-- key's budget and the organization's balance have left, in whole requests, so near a limit none is
-- granted and the last microrubles go to per-request holds. Called by apply_hold_ops
-- (services/billing-ledger/prisma/sql/apply_hold_ops.sql) for {op: "grant"}, the rows already locked.
--
-- Its outstanding reservation is amount - consumed (consumed: the estimates of the requests on it that
-- billing has recorded, allowance_spend); organizations' and keys' `reserved` count it so. It is usable
-- until the end of the budget day it was granted on.
--
-- Outcomes: granted | exists | id_reused | foreign | invalid_key | daily_budget_exceeded | insufficient_balance
-- (exists on a release's tombstone too: the allowance is returned released, nothing granted).
DROP FUNCTION IF EXISTS allowance_grant(uuid, uuid, bigint, bigint, bigint, text, text, text, numeric, timestamptz, date, text);
CREATE OR REPLACE FUNCTION allowance_grant(p_org uuid, p_hold_id uuid, p_key_id uuid, p_amount bigint, p_min bigint, p_unit bigint,
                                           p_operation text, p_source text, p_owner_ref text, p_max_share numeric,
                                           p_now timestamptz, p_day date, p_tz text,
                                           OUT o_outcome text, OUT o_hold holds, OUT o_retry_after boolean)
LANGUAGE plpgsql AS $$
DECLARE
  v_existing record;
  v_room record;
  v_reserve record;
  v_granted bigint;
BEGIN
  v_existing := hold_existing(p_org, p_hold_id, p_key_id, p_source, 'allowance', NULL);
  IF v_existing.o_outcome IS NOT NULL THEN
    o_outcome := v_existing.o_outcome;
    o_hold := v_existing.o_hold;
    RETURN;
  END IF;

  v_room := hold_room(p_org, p_key_id, p_day);
  IF v_room.o_organization_id IS NULL THEN
    o_outcome := 'invalid_key';
    RETURN;
  END IF;
  v_granted := LEAST(p_amount, floor(LEAST(v_room.o_left_budget, v_room.o_left_balance) * p_max_share)::bigint);
  -- Whole requests of the holder's estimate: a remainder too small for one would stay parked in the
  -- allowance while the same request is refused per request.
  IF p_unit > 0 THEN
    v_granted := v_granted - v_granted % p_unit;
  END IF;
  IF v_granted < GREATEST(p_min, 1) THEN
    o_outcome := CASE WHEN v_room.o_left_budget <= v_room.o_left_balance THEN 'daily_budget_exceeded' ELSE 'insufficient_balance' END;
    RETURN;
  END IF;

  v_reserve := hold_reserve(p_hold_id, v_room.o_organization_id, p_key_id, v_granted, 'allowance', p_operation, NULL,
                            p_source, p_owner_ref, p_now, (p_day + 1)::timestamp AT TIME ZONE p_tz);
  o_hold := v_reserve.o_hold;
  -- exists: a release of this id committed after the check above; it wins, this grants nothing.
  -- id_reused: another organization holds the id.
  o_outcome := CASE WHEN v_reserve.o_reserved THEN 'granted' WHEN o_hold.id IS NULL THEN 'id_reused' ELSE 'exists' END;
END $$;
