-- Allowances (issue 23, docs/api.md "Allowances"): a hold of kind 'allowance' that a service process
-- spends locally, one request's estimate at a time; billing records each request's hold (allowance_id)
-- when its settle or release arrives, and counts amount - consumed as still reserved.
-- CreateEnum
CREATE TYPE "hold_kind" AS ENUM ('request', 'allowance');

-- AlterTable
ALTER TABLE "holds" ADD COLUMN     "allowance_id" UUID,
ADD COLUMN     "closing_used" BIGINT,
ADD COLUMN     "consumed" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN     "kind" "hold_kind" NOT NULL DEFAULT 'request',
ADD COLUMN     "usable_until" TIMESTAMPTZ(3);

-- CreateIndex
CREATE INDEX "holds_allowance_id_idx" ON "holds"("allowance_id");

-- AddForeignKey
ALTER TABLE "holds" ADD CONSTRAINT "holds_allowance_id_fkey" FOREIGN KEY ("allowance_id") REFERENCES "holds"("id") ON DELETE RESTRICT ON UPDATE RESTRICT;

-- What keeps an allowance sane, whatever the application does: it never gives out more than it holds,
-- its holder never closes it with more than it holds, and only an allowance has an allowance's figures.
ALTER TABLE holds ADD CONSTRAINT holds_consumed_within_amount CHECK (consumed >= 0 AND consumed <= amount);
ALTER TABLE holds ADD CONSTRAINT holds_closing_used_within_amount
  CHECK (closing_used IS NULL OR (closing_used >= consumed AND closing_used <= amount));
ALTER TABLE holds ADD CONSTRAINT holds_allowance_figures_only_on_allowances
  CHECK (kind = 'allowance' OR (consumed = 0 AND closing_used IS NULL AND usable_until IS NULL));
ALTER TABLE holds ADD CONSTRAINT holds_allowance_never_settled CHECK (kind <> 'allowance' OR status <> 'settled');
ALTER TABLE holds ADD CONSTRAINT holds_allowance_has_usable_until CHECK (kind <> 'allowance' OR usable_until IS NOT NULL);
-- A request's hold on an allowance is recorded already resolved, never on another allowance's request.
ALTER TABLE holds ADD CONSTRAINT holds_on_allowance_is_request_and_resolved
  CHECK (allowance_id IS NULL OR (kind = 'request' AND status IN ('settled', 'released')));
-- An allowance its holder closed is released only once every request it placed on it is recorded.
ALTER TABLE holds ADD CONSTRAINT holds_closed_allowance_fully_consumed
  CHECK (closing_used IS NULL OR status <> 'released' OR consumed = closing_used);

-- The function takes ALLOWANCE_MAX_SHARE, does grants and requests on allowances, and says when a
-- refusal was caused by money parked in allowances; its text is prisma/sql/apply_hold_ops.sql.
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
--   {op: "grant",   hold_id, key_id, amount_microrub, min_microrub, unit_microrub?, operation, source, owner_ref}
--   {op: "settle",  hold_id, amount_microrub, allowance?}
--   {op: "release", hold_id, reason, allowance?, used_microrub?}
-- plus billing's own {op: "expire", hold_id, reason} and the books cross-check's
--   {op: "recover", hold_id, key_id, organization_id, amount_microrub, settled_microrub, operation, model,
--    source, owner_ref, settled_at}: a hold its owner settled (its signed record says so) that billing has
--   no record of (a restored database). It is placed and settled in one step, booked on the day the owner
--   settled it, whatever the balance: a charge the client was told of is owed even below zero.
-- A settle or release from the bus also names the service whose signed message it came from (source):
-- it applies only to a hold that service placed (for a request on an allowance: the allowance).
-- p_tz: BUDGET_TIMEZONE, where a budget day starts at 00:00.
-- p_lock_timeout_ms: the longest wait for a row lock; then the batch fails with 55P03 and the caller
--   retries it (a batch stuck behind one organization must not hold its connection indefinitely).
-- p_allowance_max_share: ALLOWANCE_MAX_SHARE, the largest fraction of what a key and its organization
--   have left that one grant may take.
-- p_now: the time of the batch. NULL (production) means now(); tests pass a time to cross midnight.
--
-- Allowances (docs/api.md, "Allowances"): a hold of kind 'allowance' that a service process spends
-- locally, one request's estimate at a time. Its outstanding reservation is amount - consumed, where
-- consumed is the sum of the estimates of the requests on it that billing has recorded; organizations'
-- and keys' `reserved` count it so. A settle or release naming `allowance` records the request's hold
-- (allowance_id = the allowance, amount = its estimate, already resolved), moves the estimate out of the
-- allowance (consumed += estimate, reserved -= estimate) and charges the cost on today's budget day: a
-- `hold` entry of the estimate (reserved_after unchanged: the reservation only moved) and its `settle`
-- or `release` entry, as a per-request hold has. The holder closes an allowance with a release naming
-- used_microrub (the estimates of every request it placed on it): it is released, the rest (amount -
-- used) in one `release` entry, once consumed reaches used, now or when the last request's command
-- arrives. A release without used_microrub (the hold audit, an operator) or an expiry frees amount -
-- consumed at once; a request's command that arrives after that is a conflict.
--
-- One row per op, in order. Each op is idempotent on hold_id and never raises for a business outcome,
-- so one refused op does not abort the others. Outcomes (the caller maps each to an answer in one table):
--   place:   placed | exists | id_reused | invalid_key | daily_budget_exceeded | insufficient_balance
--            (retry_after: the refusal would not be one if the allowances of the key and its organization
--            were returned; they are within the holders' idle time)
--   grant:   granted | exists | id_reused | invalid_key | daily_budget_exceeded | insufficient_balance
--            (exists on a release's tombstone too: the allowance is returned released, nothing granted)
--   settle:  settled | already | conflict | exceeds_hold | not_found | foreign
--   release: released | released_unplaced | closing | already | conflict | not_found | foreign
--   (foreign: the op names a source and the hold was placed by another one; nothing changes;
--    closing: an allowance's close is recorded and waits for its requests' commands;
--    not_found: a request's command names an allowance billing never granted;
--    conflict on a request's command: its allowance is not active, or the estimate does not fit it)
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
-- then the ops in arrival order (a request's command locks its allowance's hold row there). Every writer
-- of these rows takes an organization before a key, so two batches (from any number of replicas) wait
-- for each other in one direction only and never deadlock, and a batch waits only for the organizations
-- it touches. The one exception is a release that finds no hold when locks are taken while a placement
-- of the same id commits meanwhile: it then locks that hold's organization late. That can deadlock;
-- PostgreSQL aborts one side and the caller retries it.
CREATE FUNCTION apply_hold_ops(p_ops jsonb, p_tz text, p_lock_timeout_ms integer, p_allowance_max_share numeric,
                               p_now timestamptz DEFAULT NULL)
RETURNS TABLE (
  ord bigint, hold_id uuid, outcome text, status hold_status, amount bigint, settled bigint,
  organization_id uuid, key_id uuid, operation text, model text, source text, owner_ref text,
  budget_day text, created_at timestamptz, resolved_at timestamptz,
  kind hold_kind, allowance_id uuid, consumed bigint, usable_until timestamptz, retry_after boolean
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
  v_org_after record;
  v_spent bigint;
  v_hold holds%ROWTYPE;
  v_after holds%ROWTYPE;
  v_allow holds%ROWTYPE;
  v_outcome text;
  v_retry boolean;
  v_spend_id uuid;
  v_estimate bigint;
  v_cost bigint;
  v_left_budget bigint;
  v_left_balance bigint;
  v_granted bigint;
  v_rest bigint;
BEGIN
  PERFORM set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);

  -- Whose money the batch moves: the organization and key of each placement's or grant's key, of each
  -- other op's hold, and of the allowance a request's command names. Read without locks; the locks
  -- below are what the ops rely on.
  WITH x AS (
    SELECT * FROM jsonb_to_recordset(p_ops) AS x(op text, hold_id uuid, key_id uuid, allowance jsonb)
  ), touched AS (
    SELECT k.organization_id AS org, k.id AS key FROM x JOIN api_keys k ON k.id = x.key_id WHERE x.op IN ('place', 'grant', 'recover')
    UNION ALL
    SELECT h.organization_id, h.key_id FROM x JOIN holds h ON h.id = x.hold_id WHERE x.op NOT IN ('place', 'grant', 'recover')
    UNION ALL
    SELECT h.organization_id, h.key_id FROM x JOIN holds h ON h.id = (x.allowance ->> 'allowance_id')::uuid
    WHERE x.op IN ('settle', 'release') AND x.allowance IS NOT NULL
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
                                    settled_microrub bigint, settled_at timestamptz, min_microrub bigint,
                                    allowance jsonb, used_microrub bigint, unit_microrub bigint)
    ) WITH ORDINALITY AS x(op, hold_id, key_id, amount_microrub, operation, model, source, owner_ref, reason,
                           organization_id, settled_microrub, settled_at, min_microrub, allowance, used_microrub, unit_microrub, n)
    ORDER BY x.n
  LOOP
    v_outcome := NULL;
    v_after := NULL;
    v_hold := NULL;
    v_retry := NULL;

    IF it.op = 'place' THEN
      SELECT * INTO v_hold FROM holds h WHERE h.id = it.hold_id;
      IF FOUND THEN
        -- A replay must describe the same reservation; a release's tombstone (no organization) is
        -- returned as it is, so a placement that arrives after its caller gave up places nothing.
        v_outcome := CASE
          WHEN v_hold.organization_id IS NOT NULL
            AND (v_hold.key_id IS DISTINCT FROM it.key_id OR v_hold.amount <> it.amount_microrub OR v_hold.kind <> 'request') THEN 'id_reused'
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
          IF v_outcome IN ('daily_budget_exceeded', 'insufficient_balance') THEN
            -- Would it fit with the allowances of the key (budget) and of its organization (balance)
            -- returned? Then money parked in them refused it, and they come back within the holders'
            -- idle time: the caller may try again then.
            v_retry := v_spent + v_key.reserved - COALESCE((
                         SELECT sum(a.amount - a.consumed) FROM holds a
                         WHERE a.kind = 'allowance' AND a.status = 'active' AND a.key_id = it.key_id), 0)
                         + it.amount_microrub <= v_key.daily_budget
                       AND v_org.balance - v_org.reserved + COALESCE((
                         SELECT sum(a.amount - a.consumed) FROM holds a
                         WHERE a.kind = 'allowance' AND a.status = 'active' AND a.organization_id = v_key.organization_id), 0)
                         >= it.amount_microrub;
          END IF;
        END IF;
      END IF;

    ELSIF it.op = 'grant' THEN
      SELECT * INTO v_hold FROM holds h WHERE h.id = it.hold_id;
      IF FOUND THEN
        -- Granting is idempotent on the id (the amount granted may be less than asked: not compared).
        -- A release's tombstone is returned as it is: the holder gave up on this grant, nothing is granted.
        v_outcome := CASE
          WHEN v_hold.organization_id IS NOT NULL AND (v_hold.key_id IS DISTINCT FROM it.key_id OR v_hold.kind <> 'allowance') THEN 'id_reused'
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
          v_left_budget := v_key.daily_budget - v_spent - v_key.reserved;
          v_left_balance := v_org.balance - v_org.reserved;
          -- At most a share of what is left, so that near a limit no allowance is granted and the last
          -- microrubles go to per-request holds.
          v_granted := LEAST(it.amount_microrub, floor(LEAST(v_left_budget, v_left_balance) * p_allowance_max_share)::bigint);
          -- Whole requests of the holder's estimate: a remainder too small for one would stay parked
          -- in the allowance while the same request is refused per request.
          IF it.unit_microrub > 0 THEN
            v_granted := v_granted - v_granted % it.unit_microrub;
          END IF;
          IF v_granted < GREATEST(it.min_microrub, 1) THEN
            v_outcome := CASE WHEN v_left_budget <= v_left_balance THEN 'daily_budget_exceeded' ELSE 'insufficient_balance' END;
          ELSE
            INSERT INTO holds (id, organization_id, key_id, amount, status, kind, operation, source, owner_ref, created_at, usable_until)
            VALUES (it.hold_id, v_key.organization_id, it.key_id, v_granted, 'active', 'allowance', it.operation, it.source,
                    it.owner_ref, v_now, (v_day + 1)::timestamp AT TIME ZONE p_tz)
            ON CONFLICT (id) DO NOTHING
            RETURNING * INTO v_after;
            IF NOT FOUND THEN
              -- A release of this id committed after the check above: it wins, this grants nothing.
              SELECT * INTO v_after FROM holds h WHERE h.id = it.hold_id;
              v_outcome := 'exists';
            ELSE
              UPDATE api_keys k SET reserved = k.reserved + v_granted WHERE k.id = it.key_id;
              UPDATE organizations o SET reserved = o.reserved + v_granted WHERE o.id = v_key.organization_id
                RETURNING o.balance, o.reserved INTO v_org;
              INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after, reference, created_at)
              VALUES (v_key.organization_id, it.key_id, it.hold_id, 'hold', v_granted, v_org.balance, v_org.reserved, 'allowance', v_now);
              v_outcome := 'granted';
            END IF;
          END IF;
        END IF;
      END IF;

    ELSIF it.op IN ('settle', 'release') AND it.allowance IS NOT NULL THEN
      -- A request's hold its service placed locally on an allowance: recorded now, already resolved.
      v_spend_id := (it.allowance ->> 'allowance_id')::uuid;
      v_estimate := (it.allowance ->> 'reserved_microrub')::bigint;
      v_cost := CASE WHEN it.op = 'settle' THEN it.amount_microrub ELSE 0 END;
      SELECT * INTO v_hold FROM holds h WHERE h.id = it.hold_id FOR UPDATE;
      IF FOUND THEN
        -- Recorded before: the same resolution is a replay, anything else stands as it was.
        v_outcome := CASE
          WHEN v_hold.allowance_id IS DISTINCT FROM v_spend_id OR v_hold.amount <> v_estimate THEN 'conflict'
          WHEN it.op = 'settle' AND v_hold.status = 'settled' AND v_hold.settled = it.amount_microrub THEN 'already'
          WHEN it.op = 'release' AND v_hold.status IN ('released', 'expired') THEN 'already'
          ELSE 'conflict'
        END;
        v_after := v_hold;
      ELSE
        SELECT * INTO v_allow FROM holds h WHERE h.id = v_spend_id FOR UPDATE;
        IF NOT FOUND THEN
          v_outcome := 'not_found';
        ELSIF it.source IS NOT NULL AND v_allow.organization_id IS NOT NULL AND v_allow.source IS DISTINCT FROM it.source THEN
          v_outcome := 'foreign';
        ELSIF v_allow.kind <> 'allowance' OR v_allow.status <> 'active'
              OR v_allow.key_id IS DISTINCT FROM (it.allowance ->> 'key_id')::uuid
              OR v_allow.consumed + v_estimate > LEAST(v_allow.amount, COALESCE(v_allow.closing_used, v_allow.amount)) THEN
          -- Not an allowance that is still open to this request: no money moves (docs/api.md).
          v_outcome := 'conflict';
        ELSIF v_cost > v_estimate THEN
          v_outcome := 'exceeds_hold';
        ELSE
          SELECT o.balance, o.reserved INTO v_org FROM organizations o WHERE o.id = v_allow.organization_id;
          INSERT INTO holds (id, organization_id, key_id, amount, settled, status, kind, allowance_id, operation, model, source,
                             owner_ref, budget_day, reason, created_at, resolved_at)
          VALUES (it.hold_id, v_allow.organization_id, v_allow.key_id, v_estimate,
                  CASE WHEN it.op = 'settle' THEN v_cost END,
                  CASE WHEN it.op = 'settle' THEN 'settled'::hold_status ELSE 'released'::hold_status END,
                  'request', v_spend_id, it.allowance ->> 'operation', it.allowance ->> 'model', v_allow.source,
                  it.allowance ->> 'owner_ref', CASE WHEN it.op = 'settle' THEN v_day END, it.reason, v_now, v_now)
          RETURNING * INTO v_after;
          UPDATE holds h SET consumed = h.consumed + v_estimate WHERE h.id = v_spend_id RETURNING * INTO v_allow;
          UPDATE api_keys k SET reserved = k.reserved - v_estimate WHERE k.id = v_allow.key_id;
          IF v_cost > 0 THEN
            INSERT INTO key_daily_usage AS u (key_id, day, spent) VALUES (v_allow.key_id, v_day, v_cost)
            ON CONFLICT (key_id, day) DO UPDATE SET spent = u.spent + EXCLUDED.spent;
          END IF;
          UPDATE organizations o SET balance = o.balance - v_cost, reserved = o.reserved - v_estimate
          WHERE o.id = v_allow.organization_id
          RETURNING o.balance, o.reserved INTO v_org_after;
          -- The request's two entries, as a per-request hold has them: the hold (the reservation moved
          -- from the allowance to it, so reserved_after is what it was), then its settle or release.
          INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after, reference, created_at)
          VALUES (v_allow.organization_id, v_allow.key_id, it.hold_id, 'hold', v_estimate, v_org.balance, v_org.reserved, NULL, v_now),
                 (v_allow.organization_id, v_allow.key_id, it.hold_id, it.op::ledger_kind,
                  CASE WHEN it.op = 'settle' THEN v_cost ELSE v_estimate END, v_org_after.balance, v_org_after.reserved,
                  CASE WHEN it.op = 'settle' THEN NULL ELSE it.reason END, v_now);
          v_outcome := CASE it.op WHEN 'settle' THEN 'settled' ELSE 'released' END;
          -- The last request its holder closed the allowance with: the rest goes back now.
          IF v_allow.closing_used IS NOT NULL AND v_allow.consumed = v_allow.closing_used THEN
            v_rest := v_allow.amount - v_allow.consumed;
            UPDATE holds h SET status = 'released', resolved_at = v_now WHERE h.id = v_spend_id;
            UPDATE api_keys k SET reserved = k.reserved - v_rest WHERE k.id = v_allow.key_id;
            UPDATE organizations o SET reserved = o.reserved - v_rest WHERE o.id = v_allow.organization_id
              RETURNING o.balance, o.reserved INTO v_org;
            INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after, reference, created_at)
            VALUES (v_allow.organization_id, v_allow.key_id, v_spend_id, 'release', v_rest, v_org.balance, v_org.reserved, v_allow.reason, v_now);
          END IF;
        END IF;
      END IF;

    ELSIF it.op IN ('settle', 'release', 'expire') THEN
      SELECT * INTO v_hold FROM holds h WHERE h.id = it.hold_id FOR UPDATE;
      IF NOT FOUND AND it.op = 'release' THEN
        -- Released before it was placed (its caller gave up waiting): remember the id so a late
        -- placement or grant finds it taken. If a placement commits first, release that hold instead.
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
      ELSIF it.op = 'release' AND it.used_microrub IS NOT NULL THEN
        -- Closing an allowance: its holder placed used_microrub of estimates on it, all of them final.
        v_outcome := CASE
          WHEN v_hold.kind <> 'allowance' THEN 'conflict'
          WHEN v_hold.closing_used IS NOT NULL THEN CASE WHEN v_hold.closing_used = it.used_microrub THEN 'already' ELSE 'conflict' END
          WHEN v_hold.status IN ('released', 'expired') THEN 'already'
          WHEN v_hold.status <> 'active' OR it.used_microrub > v_hold.amount OR it.used_microrub < v_hold.consumed THEN 'conflict'
          ELSE NULL
        END;
        v_after := v_hold;
        IF v_outcome IS NULL THEN
          UPDATE holds h SET closing_used = it.used_microrub, reason = it.reason WHERE h.id = v_hold.id RETURNING * INTO v_after;
          v_outcome := 'closing';
          IF v_after.consumed = v_after.closing_used THEN
            v_rest := v_after.amount - v_after.consumed;
            UPDATE holds h SET status = 'released', resolved_at = v_now WHERE h.id = v_hold.id RETURNING * INTO v_after;
            UPDATE api_keys k SET reserved = k.reserved - v_rest WHERE k.id = v_hold.key_id;
            UPDATE organizations o SET reserved = o.reserved - v_rest WHERE o.id = v_hold.organization_id
              RETURNING o.balance, o.reserved INTO v_org;
            INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after, reference, created_at)
            VALUES (v_hold.organization_id, v_hold.key_id, v_hold.id, 'release', v_rest, v_org.balance, v_org.reserved, it.reason, v_now);
            v_outcome := 'released';
          END IF;
        END IF;
      ELSIF v_hold.status <> 'active' THEN
        v_outcome := CASE
          WHEN it.op = 'settle' AND v_hold.status = 'settled' AND v_hold.settled = it.amount_microrub THEN 'already'
          WHEN it.op IN ('release', 'expire') AND v_hold.status IN ('released', 'expired') THEN 'already'
          ELSE 'conflict'
        END;
        v_after := v_hold;
      ELSIF it.op = 'release' AND v_hold.closing_used IS NOT NULL THEN
        -- Closed by its holder and waiting for its requests' commands: only they (or the expiry) end it.
        v_outcome := 'conflict';
        v_after := v_hold;
      ELSIF it.op = 'settle' AND v_hold.kind = 'allowance' THEN
        -- An allowance is never charged itself: its requests are.
        v_outcome := 'conflict';
        v_after := v_hold;
      ELSIF it.op = 'settle' AND it.amount_microrub > v_hold.amount THEN
        v_outcome := 'exceeds_hold';
        v_after := v_hold;
      ELSE
        -- What is still reserved: all of a request's hold, an allowance's amount - consumed.
        v_rest := v_hold.amount - v_hold.consumed;
        UPDATE holds h SET
          status = CASE it.op WHEN 'settle' THEN 'settled'::hold_status WHEN 'release' THEN 'released'::hold_status ELSE 'expired'::hold_status END,
          settled = CASE WHEN it.op = 'settle' THEN it.amount_microrub END,
          budget_day = CASE WHEN it.op = 'settle' THEN v_day END,
          reason = COALESCE(it.reason, h.reason),
          resolved_at = v_now
        WHERE h.id = v_hold.id
        RETURNING * INTO v_after;
        UPDATE api_keys k SET reserved = k.reserved - v_rest WHERE k.id = v_hold.key_id;
        IF it.op = 'settle' AND it.amount_microrub > 0 THEN
          INSERT INTO key_daily_usage AS u (key_id, day, spent) VALUES (v_hold.key_id, v_day, it.amount_microrub)
          ON CONFLICT (key_id, day) DO UPDATE SET spent = u.spent + EXCLUDED.spent;
        END IF;
        UPDATE organizations o SET
          balance = o.balance - CASE WHEN it.op = 'settle' THEN it.amount_microrub ELSE 0 END,
          reserved = o.reserved - v_rest
        WHERE o.id = v_hold.organization_id
        RETURNING o.balance, o.reserved INTO v_org;
        -- A release or an expiry says why in its ledger entry.
        INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after, reference, created_at)
        VALUES (
          v_hold.organization_id, v_hold.key_id, v_hold.id, it.op::ledger_kind,
          CASE WHEN it.op = 'settle' THEN it.amount_microrub ELSE v_rest END,
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
    kind := v_after.kind;
    allowance_id := v_after.allowance_id;
    consumed := v_after.consumed;
    usable_until := v_after.usable_until;
    retry_after := COALESCE(v_retry, false);
    RETURN NEXT;
  END LOOP;
END $$;
