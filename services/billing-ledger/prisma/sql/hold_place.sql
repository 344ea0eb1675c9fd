-- hold_place: a per-request hold reserves its estimate only if it fits both the key's daily budget and
-- the organization's available balance, so concurrent holds cannot overrun either (docs/api.md, "Money
-- rules, in one place"). Called by apply_hold_ops (services/billing-ledger/prisma/sql/apply_hold_ops.sql)
-- for {op: "place"}, with the key's and organization's rows already locked.
--
-- The room left on the key's budget day and in the organization's balance is hold_room's; a settlement
-- counts on the day it is settled (holds.budget_day).
--
-- Outcomes: placed | exists | id_reused | foreign | invalid_key | daily_budget_exceeded | insufficient_balance;
-- o_retry_after on a refusal that money parked in allowances caused (they come back). p_org is the
-- batch's organization: a key of another one is invalid_key here.
DROP FUNCTION IF EXISTS hold_place(uuid, uuid, bigint, text, text, text, text, timestamptz, date);
CREATE OR REPLACE FUNCTION hold_place(p_org uuid, p_hold_id uuid, p_key_id uuid, p_amount bigint, p_operation text, p_model text,
                                      p_source text, p_owner_ref text, p_now timestamptz, p_day date,
                                      OUT o_outcome text, OUT o_hold holds, OUT o_retry_after boolean)
LANGUAGE plpgsql AS $$
DECLARE
  v_existing record;
  v_room record;
  v_reserve record;
BEGIN
  v_existing := hold_existing(p_org, p_hold_id, p_key_id, p_source, 'request', p_amount);
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
  IF p_amount > v_room.o_left_budget THEN
    o_outcome := 'daily_budget_exceeded';
  ELSIF p_amount > v_room.o_left_balance THEN
    o_outcome := 'insufficient_balance';
  ELSE
    v_reserve := hold_reserve(p_hold_id, v_room.o_organization_id, p_key_id, p_amount, 'request', p_operation, p_model,
                              p_source, p_owner_ref, p_now, NULL);
    o_hold := v_reserve.o_hold;
    -- exists: a release of this id committed after the check above; it wins, this places nothing.
    -- id_reused: another organization holds the id.
    o_outcome := CASE WHEN v_reserve.o_reserved THEN 'placed' WHEN o_hold.id IS NULL THEN 'id_reused' ELSE 'exists' END;
    RETURN;
  END IF;

  -- Would it fit with the allowances of the key (budget) and of its organization (balance) returned?
  -- Then money parked in them refused it, and they come back within the holders' idle time: the
  -- caller may try again then.
  o_retry_after := p_amount <= v_room.o_left_budget + COALESCE((
                     SELECT sum(hold_reserves(a)) FROM holds a
                     WHERE a.organization_id = p_org AND a.kind = 'allowance' AND a.status = 'active' AND a.key_id = p_key_id), 0)
                   AND p_amount <= v_room.o_left_balance + COALESCE((
                     SELECT sum(hold_reserves(a)) FROM holds a
                     WHERE a.organization_id = p_org AND a.kind = 'allowance' AND a.status = 'active'), 0);
END $$;
