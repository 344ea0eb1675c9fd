-- Money invariants the database itself refuses to break, whatever the application does.
ALTER TABLE organizations ADD CONSTRAINT organizations_reserved_nonnegative CHECK (reserved >= 0);
ALTER TABLE organizations ADD CONSTRAINT organizations_reserved_within_balance CHECK (balance >= reserved);
ALTER TABLE key_daily_usage ADD CONSTRAINT key_daily_usage_nonnegative CHECK (spent >= 0 AND reserved >= 0);
ALTER TABLE holds ADD CONSTRAINT holds_amount_nonnegative CHECK (amount >= 0);
ALTER TABLE holds ADD CONSTRAINT holds_settled_within_amount CHECK (settled IS NULL OR (settled >= 0 AND settled <= amount));
ALTER TABLE holds ADD CONSTRAINT holds_settled_iff_status CHECK ((status = 'settled') = (settled IS NOT NULL));
ALTER TABLE credits ADD CONSTRAINT credits_amount_positive CHECK (amount > 0);

-- The ledger is append-only.
CREATE FUNCTION ledger_entries_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger_entries is append-only';
END $$;
CREATE TRIGGER ledger_entries_no_update_or_delete BEFORE UPDATE OR DELETE ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION ledger_entries_append_only();

-- apply_hold_ops: every hold operation of a batch in one round trip and one commit.
--
-- p_ops is a JSON array of {op, hold_id, ...}:
--   {op: "place",   hold_id, key_id, amount, operation, model, source}
--   {op: "settle",  hold_id, amount}
--   {op: "release", hold_id, reason}
--   {op: "expire",  hold_id}
-- Each op is idempotent on hold_id and never raises for a business outcome, so one refused op does not
-- abort the others. Outcomes:
--   place:   placed | exists | invalid_key | daily_budget_exceeded | insufficient_balance
--   settle:  settled | already | conflict | exceeds_hold | not_found
--   release: released | already | conflict | released_unplaced
--   expire:  expired | already | conflict | not_found
-- Locks are taken hold row -> key day usage -> organization, the same order for every op.
CREATE FUNCTION apply_hold_ops(p_ops jsonb, p_tz text)
RETURNS TABLE (
  ord bigint, hold_id uuid, outcome text, status hold_status, amount bigint, settled bigint,
  organization_id uuid, key_id uuid, operation text, model text, source text, budget_day date,
  created_at timestamptz, resolved_at timestamptz
)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  it record;
  v_day date := (now() AT TIME ZONE p_tz)::date;
  v_key record;
  v_usage record;
  v_org record;
  v_hold holds%ROWTYPE;
  v_outcome text;
  v_ids uuid[] := '{}';
  v_outcomes text[] := '{}';
BEGIN
  FOR it IN
    SELECT * FROM jsonb_to_recordset(p_ops)
      AS x(op text, hold_id uuid, key_id uuid, amount bigint, operation text, model text, source text, reason text)
  LOOP
    v_outcome := NULL;

    IF it.op = 'place' THEN
      IF EXISTS (SELECT 1 FROM holds h WHERE h.id = it.hold_id) THEN
        v_outcome := 'exists';
      ELSE
        SELECT k.organization_id, k.daily_budget, k.status INTO v_key FROM api_keys k WHERE k.id = it.key_id;
        IF NOT FOUND OR v_key.status <> 'active' THEN
          v_outcome := 'invalid_key';
        ELSE
          INSERT INTO key_daily_usage (key_id, day) VALUES (it.key_id, v_day) ON CONFLICT DO NOTHING;
          SELECT u.spent, u.reserved INTO v_usage FROM key_daily_usage u
            WHERE u.key_id = it.key_id AND u.day = v_day FOR UPDATE;
          IF v_usage.spent + v_usage.reserved + it.amount > v_key.daily_budget THEN
            v_outcome := 'daily_budget_exceeded';
          ELSE
            SELECT o.balance, o.reserved INTO v_org FROM organizations o WHERE o.id = v_key.organization_id FOR UPDATE;
            IF v_org.balance - v_org.reserved < it.amount THEN
              v_outcome := 'insufficient_balance';
            ELSE
              -- A concurrent placement or release of the same id wins; this one then places nothing.
              INSERT INTO holds (id, organization_id, key_id, amount, status, operation, model, source, budget_day)
              VALUES (it.hold_id, v_key.organization_id, it.key_id, it.amount, 'active', it.operation, it.model, it.source, v_day)
              ON CONFLICT (id) DO NOTHING;
              IF NOT FOUND THEN
                v_outcome := 'exists';
              ELSE
                UPDATE key_daily_usage u SET reserved = u.reserved + it.amount WHERE u.key_id = it.key_id AND u.day = v_day;
                UPDATE organizations o SET reserved = o.reserved + it.amount WHERE o.id = v_key.organization_id
                  RETURNING o.balance, o.reserved INTO v_org;
                INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after)
                VALUES (v_key.organization_id, it.key_id, it.hold_id, 'hold', it.amount, v_org.balance, v_org.reserved);
                v_outcome := 'placed';
              END IF;
            END IF;
          END IF;
        END IF;
      END IF;

    ELSIF it.op IN ('settle', 'release', 'expire') THEN
      SELECT * INTO v_hold FROM holds h WHERE h.id = it.hold_id FOR UPDATE;
      IF NOT FOUND AND it.op = 'release' THEN
        -- Released before it was placed (its caller gave up waiting): remember the id so a late
        -- placement finds it taken. If a placement commits first, release that hold instead.
        INSERT INTO holds (id, amount, status, reason, resolved_at)
        VALUES (it.hold_id, 0, 'released', it.reason, now())
        ON CONFLICT (id) DO NOTHING;
        IF FOUND THEN
          v_outcome := 'released_unplaced';
        ELSE
          SELECT * INTO v_hold FROM holds h WHERE h.id = it.hold_id FOR UPDATE;
        END IF;
      END IF;

      IF v_outcome IS NOT NULL THEN
        NULL;
      ELSIF v_hold.id IS NULL THEN
        v_outcome := 'not_found';
      ELSIF v_hold.status <> 'active' THEN
        v_outcome := CASE
          WHEN it.op = 'settle' AND v_hold.status = 'settled' AND v_hold.settled = it.amount THEN 'already'
          WHEN it.op = 'release' AND v_hold.status IN ('released', 'expired') THEN 'already'
          WHEN it.op = 'expire' AND v_hold.status IN ('released', 'expired') THEN 'already'
          ELSE 'conflict'
        END;
      ELSIF it.op = 'settle' AND it.amount > v_hold.amount THEN
        v_outcome := 'exceeds_hold';
      ELSE
        UPDATE holds h SET
          status = CASE it.op WHEN 'settle' THEN 'settled'::hold_status WHEN 'release' THEN 'released'::hold_status ELSE 'expired'::hold_status END,
          settled = CASE WHEN it.op = 'settle' THEN it.amount END,
          reason = COALESCE(it.reason, h.reason),
          resolved_at = now()
        WHERE h.id = v_hold.id;
        UPDATE key_daily_usage u SET
          reserved = u.reserved - v_hold.amount,
          spent = u.spent + CASE WHEN it.op = 'settle' THEN it.amount ELSE 0 END
        WHERE u.key_id = v_hold.key_id AND u.day = v_hold.budget_day;
        UPDATE organizations o SET
          balance = o.balance - CASE WHEN it.op = 'settle' THEN it.amount ELSE 0 END,
          reserved = o.reserved - v_hold.amount
        WHERE o.id = v_hold.organization_id
        RETURNING o.balance, o.reserved INTO v_org;
        INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after)
        VALUES (
          v_hold.organization_id, v_hold.key_id, v_hold.id, it.op::ledger_kind,
          CASE WHEN it.op = 'settle' THEN it.amount ELSE v_hold.amount END,
          v_org.balance, v_org.reserved
        );
        v_outcome := CASE it.op WHEN 'settle' THEN 'settled' WHEN 'release' THEN 'released' ELSE 'expired' END;
      END IF;
      v_hold := NULL;

    ELSE
      RAISE EXCEPTION 'apply_hold_ops: unknown op %', it.op;
    END IF;

    v_ids := v_ids || it.hold_id;
    v_outcomes := v_outcomes || v_outcome;
  END LOOP;

  RETURN QUERY
    SELECT r.ord, r.id, r.outcome, h.status, h.amount, h.settled, h.organization_id, h.key_id,
           h.operation, h.model, h.source, h.budget_day, h.created_at, h.resolved_at
    FROM unnest(v_ids, v_outcomes) WITH ORDINALITY AS r(id, outcome, ord)
    LEFT JOIN holds h ON h.id = r.id
    ORDER BY r.ord;
END $$;
