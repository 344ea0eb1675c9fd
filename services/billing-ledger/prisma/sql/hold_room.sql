-- hold_room: what a key may still reserve, the one place the daily budget and balance rule is read
-- (docs/api.md, "Money rules, in one place"), for a request's placement (hold_place) and an allowance's
-- grant (allowance_grant). The budget left is the daily budget less the charges settled on the budget day
-- and every active hold of the key whenever it was placed (api_keys.reserved), so a hold placed at 23:59
-- still counts after midnight; the balance left is the organization's balance less its reserved. The
-- caller has locked the key's and organization's rows. o_organization_id is null for a key that is
-- missing, not active or not p_org's: nothing may be reserved on it.
DROP FUNCTION IF EXISTS hold_room(uuid, date);
CREATE OR REPLACE FUNCTION hold_room(p_org uuid, p_key_id uuid, p_day date,
                                     OUT o_organization_id uuid, OUT o_left_budget bigint, OUT o_left_balance bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_key record;
BEGIN
  SELECT k.organization_id, k.daily_budget, k.status, k.reserved INTO v_key FROM api_keys k WHERE k.organization_id = p_org AND k.id = p_key_id;
  IF NOT FOUND OR v_key.status <> 'active' THEN
    RETURN;
  END IF;
  o_organization_id := v_key.organization_id;
  o_left_budget := v_key.daily_budget - v_key.reserved
                   - (SELECT COALESCE(sum(u.spent), 0) FROM key_daily_usage u
                      WHERE u.organization_id = p_org AND u.key_id = p_key_id AND u.day = p_day);
  SELECT o.balance - o.reserved INTO o_left_balance FROM organizations o WHERE o.id = p_org;
END $$;
