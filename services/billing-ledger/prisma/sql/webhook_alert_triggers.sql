-- The two alerts that follow money, detected by triggers in the very transaction that moved it, so
-- an alert is never lost nor sent for a change that rolled back (docs/api.md, "Webhooks"):
--
-- budget.threshold: a key's settled spend of a budget day (key_daily_usage, written by hold_resolve,
--   allowance_spend and hold_recover) went from under to at or over one of its budget_alert_percents
--   of its daily budget. Once per key, budget day and percent (the event's dedupe key).
-- balance.low: an organization's available balance (balance - reserved) fell under its
--   low_balance_microrub (NULL: no alert). Once per crossing: another comes only after a credit, so holds
--   placed and released around the line do not repeat it.
--
-- The triggers are (re)created here rather than in a migration because they need these functions,
-- which live only in this folder; CREATE OR REPLACE TRIGGER makes the file safe to run again.
CREATE OR REPLACE FUNCTION webhook_budget_threshold() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_old bigint := CASE WHEN TG_OP = 'UPDATE' THEN OLD.spent ELSE 0 END;
  v_key record;
  v_percent integer;
BEGIN
  SELECT k.id, k.organization_id, k.name, k.daily_budget, k.budget_alert_percents INTO v_key
  FROM api_keys k WHERE k.organization_id = NEW.organization_id AND k.id = NEW.key_id;
  IF cardinality(v_key.budget_alert_percents) = 0 OR v_key.daily_budget <= 0 THEN
    RETURN NULL;
  END IF;
  FOREACH v_percent IN ARRAY v_key.budget_alert_percents LOOP
    -- Integer arithmetic: crossed when spent * 100 reaches percent * budget.
    IF v_old * 100 < v_percent::bigint * v_key.daily_budget AND NEW.spent * 100 >= v_percent::bigint * v_key.daily_budget THEN
      PERFORM webhook_event_emit(
        v_key.organization_id, 'budget.threshold',
        'budget.threshold:' || v_key.id || ':' || to_char(NEW.day, 'YYYY-MM-DD') || ':' || v_percent,
        jsonb_build_object('organization_id', v_key.organization_id, 'key_id', v_key.id, 'key_name', v_key.name,
                           'budget_day', to_char(NEW.day, 'YYYY-MM-DD'), 'percent', v_percent,
                           'daily_budget_microrub', v_key.daily_budget,
                           'threshold_microrub', (v_percent::bigint * v_key.daily_budget + 99) / 100,
                           'spent_microrub', NEW.spent));
    END IF;
  END LOOP;
  RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER key_daily_usage_budget_threshold AFTER INSERT OR UPDATE OF spent ON key_daily_usage
  FOR EACH ROW EXECUTE FUNCTION webhook_budget_threshold();

CREATE OR REPLACE FUNCTION webhook_balance_low() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_last_credit timestamptz;
BEGIN
  SELECT max(c.created_at) INTO v_last_credit FROM credits c WHERE c.organization_id = NEW.id;
  IF EXISTS (SELECT 1 FROM webhook_events e
             WHERE e.organization_id = NEW.id AND e.type = 'balance.low'
               AND e.created_at >= COALESCE(v_last_credit, '-infinity'::timestamptz)) THEN
    RETURN NULL;
  END IF;
  PERFORM webhook_event_emit(
    NEW.id, 'balance.low', NULL,
    jsonb_build_object('organization_id', NEW.id, 'available_microrub', NEW.balance - NEW.reserved,
                       'balance_microrub', NEW.balance, 'reserved_microrub', NEW.reserved,
                       'low_balance_microrub', NEW.low_balance_microrub));
  RETURN NULL;
END $$;

-- The WHEN clause keeps the cost off every other update of an organization (each hold moves its figures).
CREATE OR REPLACE TRIGGER organizations_balance_low AFTER UPDATE OF balance, reserved ON organizations
  FOR EACH ROW
  WHEN (NEW.low_balance_microrub IS NOT NULL AND NEW.balance - NEW.reserved < NEW.low_balance_microrub
        AND OLD.balance - OLD.reserved >= NEW.low_balance_microrub)
  EXECUTE FUNCTION webhook_balance_low();
