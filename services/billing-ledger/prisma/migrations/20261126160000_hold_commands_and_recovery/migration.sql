-- The two changes of 2026-11-26 together: a bus command applies only to a hold its signer placed
-- (20261126143000), and the books cross-check recovers a settlement billing lost (20261126150000).
-- Each of those migrations defined the function with its own change alone.
DROP FUNCTION apply_hold_ops(jsonb, text, integer, timestamptz);

-- apply_hold_ops: the money rules of holds. Every placement, settlement, release and expiry of a batch
-- in one round trip and one commit.
--
-- Called by src/repositories/hold-ops.repository.ts. A migration applies this file's text verbatim
-- (test/migrations.test.ts checks that the newest migration defining the function contains
-- exactly this text). To change a rule: edit this file, then add a migration that drops the function
-- and contains the new text. Applied migrations are never edited.
--
-- p_ops: a JSON array of the contracts' HoldOp (packages/contracts/src/billing.ts), as the caller sent it:
--   {op: "place",   hold_id, key_id, amount_microrub, operation, model, source, owner_ref}
--   {op: "settle",  hold_id, amount_microrub}
--   {op: "release", hold_id, reason}
-- plus billing's own {op: "expire", hold_id, reason} and the books cross-check's
--   {op: "recover", hold_id, key_id, organization_id, amount_microrub, settled_microrub, operation, model,
--    source, owner_ref, settled_at}: a hold its owner settled (its signed record says so) that billing has
--   no record of (a restored database). It is placed and settled in one step, booked on the day the owner
--   settled it, whatever the balance: a charge the client was told of is owed even below zero.
-- A settle or release from the bus also names the service whose signed message it came from (source):
-- it applies only to a hold that service placed.
-- p_tz: BUDGET_TIMEZONE, where a budget day starts at 00:00.
-- p_lock_timeout_ms: the longest wait for a row lock; then the batch fails with 55P03 and the caller
--   retries it (a batch stuck behind one organization must not hold its connection indefinitely).
-- p_now: the time of the batch. NULL (production) means now(); tests pass a time to cross midnight.
--
-- One row per op, in order. Each op is idempotent on hold_id and never raises for a business outcome,
-- so one refused op does not abort the others. Outcomes (the caller maps each to an answer in one table):
--   place:   placed | exists | id_reused | invalid_key | daily_budget_exceeded | insufficient_balance
--   settle:  settled | already | conflict | exceeds_hold | not_found | foreign
--   release: released | released_unplaced | already | conflict | foreign
--   (foreign: the op names a source and the hold was placed by another one; nothing changes)
--   expire:  expired | already | conflict | not_found
--   recover: recovered | already | conflict | invalid_key (the key is not the organization's)
--
-- The daily budget: a key may place a hold while the charges settled on the budget day so far, plus every
-- active hold of the key whenever it was placed, plus the new hold stay within its daily_budget.
-- api_keys.reserved is the sum of the key's active holds; key_daily_usage.spent is the sum of the charges
-- settled on each budget day; holds.budget_day is the day a settled hold's charge was booked on. A hold
-- placed at 23:59 thus still counts after midnight, and its settlement counts on the day it is settled.
--
-- Locks: first every organization row the batch touches, then every key row, each in id order, and only
-- then the ops in arrival order. Every writer of these rows takes an organization before a key, so two
-- batches (from any number of replicas) wait for each other in one direction only and never deadlock,
-- and a batch waits only for the organizations it touches. The one exception is a release that finds no
-- hold when locks are taken while a placement of the same id commits meanwhile: it then locks that
-- hold's organization late. That can deadlock; PostgreSQL aborts one side and the caller retries it.
CREATE FUNCTION apply_hold_ops(p_ops jsonb, p_tz text, p_lock_timeout_ms integer, p_now timestamptz DEFAULT NULL)
RETURNS TABLE (
  ord bigint, hold_id uuid, outcome text, status hold_status, amount bigint, settled bigint,
  organization_id uuid, key_id uuid, operation text, model text, source text, owner_ref text,
  budget_day text, created_at timestamptz, resolved_at timestamptz
)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz := COALESCE(p_now, now());
  v_day date := (v_now AT TIME ZONE p_tz)::date;
  v_orgs uuid[];
  v_keys uuid[];
  it record;
  v_key record;
  v_org record;
  v_spent bigint;
  v_hold holds%ROWTYPE;
  v_after holds%ROWTYPE;
  v_outcome text;
BEGIN
  PERFORM set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);

  -- Whose money the batch moves: the organization and key of each placement's key and of each
  -- other op's hold. Read without locks; the locks below are what the ops rely on.
  WITH x AS (
    SELECT * FROM jsonb_to_recordset(p_ops) AS x(op text, hold_id uuid, key_id uuid)
  ), touched AS (
    SELECT k.organization_id AS org, k.id AS key FROM x JOIN api_keys k ON k.id = x.key_id WHERE x.op IN ('place', 'recover')
    UNION ALL
    SELECT h.organization_id, h.key_id FROM x JOIN holds h ON h.id = x.hold_id WHERE x.op NOT IN ('place', 'recover')
  )
  SELECT array_agg(DISTINCT t.org ORDER BY t.org) FILTER (WHERE t.org IS NOT NULL),
         array_agg(DISTINCT t.key ORDER BY t.key) FILTER (WHERE t.key IS NOT NULL)
  INTO v_orgs, v_keys
  FROM touched t;

  PERFORM 1 FROM organizations o WHERE o.id = ANY (v_orgs) ORDER BY o.id FOR NO KEY UPDATE;
  PERFORM 1 FROM api_keys k WHERE k.id = ANY (v_keys) ORDER BY k.id FOR NO KEY UPDATE;

  FOR it IN
    SELECT * FROM ROWS FROM (
      jsonb_to_recordset(p_ops) AS (op text, hold_id uuid, key_id uuid, amount_microrub bigint, operation text,
                                    model text, source text, owner_ref text, reason text, organization_id uuid,
                                    settled_microrub bigint, settled_at timestamptz)
    ) WITH ORDINALITY AS x(op, hold_id, key_id, amount_microrub, operation, model, source, owner_ref, reason,
                           organization_id, settled_microrub, settled_at, n)
    ORDER BY x.n
  LOOP
    v_outcome := NULL;
    v_after := NULL;

    IF it.op = 'place' THEN
      SELECT * INTO v_hold FROM holds h WHERE h.id = it.hold_id;
      IF FOUND THEN
        -- A replay must describe the same reservation; a release's tombstone (no organization) is
        -- returned as it is, so a placement that arrives after its caller gave up places nothing.
        v_outcome := CASE
          WHEN v_hold.organization_id IS NOT NULL
            AND (v_hold.key_id IS DISTINCT FROM it.key_id OR v_hold.amount <> it.amount_microrub) THEN 'id_reused'
          ELSE 'exists'
        END;
        v_after := v_hold;
      ELSE
        SELECT k.organization_id, k.daily_budget, k.status, k.reserved INTO v_key FROM api_keys k WHERE k.id = it.key_id;
        IF NOT FOUND OR v_key.status <> 'active' THEN
          v_outcome := 'invalid_key';
        ELSE
          SELECT COALESCE(sum(u.spent), 0) INTO v_spent FROM key_daily_usage u WHERE u.key_id = it.key_id AND u.day = v_day;
          SELECT o.balance, o.reserved INTO v_org FROM organizations o WHERE o.id = v_key.organization_id;
          IF v_spent + v_key.reserved + it.amount_microrub > v_key.daily_budget THEN
            v_outcome := 'daily_budget_exceeded';
          ELSIF v_org.balance - v_org.reserved < it.amount_microrub THEN
            v_outcome := 'insufficient_balance';
          ELSE
            INSERT INTO holds (id, organization_id, key_id, amount, status, operation, model, source, owner_ref, created_at)
            VALUES (it.hold_id, v_key.organization_id, it.key_id, it.amount_microrub, 'active', it.operation, it.model,
                    it.source, it.owner_ref, v_now)
            ON CONFLICT (id) DO NOTHING
            RETURNING * INTO v_after;
            IF NOT FOUND THEN
              -- A release of this id committed after the check above: it wins, this places nothing.
              SELECT * INTO v_after FROM holds h WHERE h.id = it.hold_id;
              v_outcome := 'exists';
            ELSE
              UPDATE api_keys k SET reserved = k.reserved + it.amount_microrub WHERE k.id = it.key_id;
              UPDATE organizations o SET reserved = o.reserved + it.amount_microrub WHERE o.id = v_key.organization_id
                RETURNING o.balance, o.reserved INTO v_org;
              INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after, created_at)
              VALUES (v_key.organization_id, it.key_id, it.hold_id, 'hold', it.amount_microrub, v_org.balance, v_org.reserved, v_now);
              v_outcome := 'placed';
            END IF;
          END IF;
        END IF;
      END IF;

    ELSIF it.op IN ('settle', 'release', 'expire') THEN
      SELECT * INTO v_hold FROM holds h WHERE h.id = it.hold_id FOR UPDATE;
      IF NOT FOUND AND it.op = 'release' THEN
        -- Released before it was placed (its caller gave up waiting): remember the id so a late
        -- placement finds it taken. If a placement commits first, release that hold instead.
        INSERT INTO holds (id, amount, status, reason, created_at, resolved_at)
        VALUES (it.hold_id, 0, 'released', it.reason, v_now, v_now)
        ON CONFLICT (id) DO NOTHING
        RETURNING * INTO v_after;
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
      ELSIF it.source IS NOT NULL AND v_hold.organization_id IS NOT NULL AND v_hold.source IS DISTINCT FROM it.source THEN
        -- Only the service that placed a hold resolves it: another one's command moves no money.
        v_outcome := 'foreign';
        v_after := v_hold;
      ELSIF v_hold.status <> 'active' THEN
        v_outcome := CASE
          WHEN it.op = 'settle' AND v_hold.status = 'settled' AND v_hold.settled = it.amount_microrub THEN 'already'
          WHEN it.op IN ('release', 'expire') AND v_hold.status IN ('released', 'expired') THEN 'already'
          ELSE 'conflict'
        END;
        v_after := v_hold;
      ELSIF it.op = 'settle' AND it.amount_microrub > v_hold.amount THEN
        v_outcome := 'exceeds_hold';
        v_after := v_hold;
      ELSE
        UPDATE holds h SET
          status = CASE it.op WHEN 'settle' THEN 'settled'::hold_status WHEN 'release' THEN 'released'::hold_status ELSE 'expired'::hold_status END,
          settled = CASE WHEN it.op = 'settle' THEN it.amount_microrub END,
          budget_day = CASE WHEN it.op = 'settle' THEN v_day END,
          reason = COALESCE(it.reason, h.reason),
          resolved_at = v_now
        WHERE h.id = v_hold.id
        RETURNING * INTO v_after;
        UPDATE api_keys k SET reserved = k.reserved - v_hold.amount WHERE k.id = v_hold.key_id;
        IF it.op = 'settle' AND it.amount_microrub > 0 THEN
          INSERT INTO key_daily_usage AS u (key_id, day, spent) VALUES (v_hold.key_id, v_day, it.amount_microrub)
          ON CONFLICT (key_id, day) DO UPDATE SET spent = u.spent + EXCLUDED.spent;
        END IF;
        UPDATE organizations o SET
          balance = o.balance - CASE WHEN it.op = 'settle' THEN it.amount_microrub ELSE 0 END,
          reserved = o.reserved - v_hold.amount
        WHERE o.id = v_hold.organization_id
        RETURNING o.balance, o.reserved INTO v_org;
        -- A release or an expiry says why in its ledger entry.
        INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after, reference, created_at)
        VALUES (
          v_hold.organization_id, v_hold.key_id, v_hold.id, it.op::ledger_kind,
          CASE WHEN it.op = 'settle' THEN it.amount_microrub ELSE v_hold.amount END,
          v_org.balance, v_org.reserved,
          CASE WHEN it.op = 'settle' THEN NULL ELSE it.reason END,
          v_now
        );
        v_outcome := CASE it.op WHEN 'settle' THEN 'settled' WHEN 'release' THEN 'released' ELSE 'expired' END;
      END IF;

    ELSIF it.op = 'recover' THEN
      SELECT * INTO v_hold FROM holds h WHERE h.id = it.hold_id FOR UPDATE;
      IF FOUND THEN
        -- Recovered before, or billing has it after all: the same settlement is a no-op, anything else stands.
        v_outcome := CASE WHEN v_hold.status = 'settled' AND v_hold.settled = it.settled_microrub THEN 'already' ELSE 'conflict' END;
        v_after := v_hold;
      ELSIF NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.id = it.key_id AND k.organization_id = it.organization_id) THEN
        v_outcome := 'invalid_key';
      ELSE
        INSERT INTO holds (id, organization_id, key_id, amount, settled, status, operation, model, source, owner_ref,
                           budget_day, reason, created_at, resolved_at)
        VALUES (it.hold_id, it.organization_id, it.key_id, it.amount_microrub, it.settled_microrub, 'settled', it.operation,
                it.model, it.source, it.owner_ref, (it.settled_at AT TIME ZONE p_tz)::date,
                'recovered from its owner''s final record', it.settled_at, it.settled_at)
        RETURNING * INTO v_after;
        IF it.settled_microrub > 0 THEN
          INSERT INTO key_daily_usage AS u (key_id, day, spent) VALUES (it.key_id, v_after.budget_day, it.settled_microrub)
          ON CONFLICT (key_id, day) DO UPDATE SET spent = u.spent + EXCLUDED.spent;
        END IF;
        UPDATE organizations o SET balance = o.balance - it.settled_microrub,
                                   owes = o.owes OR o.balance - it.settled_microrub < o.reserved
        WHERE o.id = it.organization_id
        RETURNING o.balance, o.reserved INTO v_org;
        INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after, reference, created_at)
        VALUES (it.organization_id, it.key_id, it.hold_id, 'hold', it.amount_microrub, v_org.balance + it.settled_microrub, v_org.reserved,
                'recovered', it.settled_at),
               (it.organization_id, it.key_id, it.hold_id, 'settle', it.settled_microrub, v_org.balance, v_org.reserved,
                'recovered', it.settled_at);
        v_outcome := 'recovered';
      END IF;

    ELSE
      RAISE EXCEPTION 'apply_hold_ops: unknown op %', it.op;
    END IF;

    ord := it.n;
    hold_id := it.hold_id;
    outcome := v_outcome;
    status := v_after.status;
    amount := v_after.amount;
    settled := v_after.settled;
    organization_id := v_after.organization_id;
    key_id := v_after.key_id;
    operation := v_after.operation;
    model := v_after.model;
    source := v_after.source;
    owner_ref := v_after.owner_ref;
    budget_day := to_char(v_after.budget_day, 'YYYY-MM-DD');
    created_at := v_after.created_at;
    resolved_at := v_after.resolved_at;
    RETURN NEXT;
  END LOOP;
END $$;
