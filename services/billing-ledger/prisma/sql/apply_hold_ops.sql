-- apply_hold_ops: every placement, grant, settlement, release, expiry and recovery of one
-- organization's batch in one round trip and one commit. The batch only takes the locks
-- (hold_ops_lock), applies its plain requests on allowances together (allowance_spend_batch) and hands
-- every other op, in order, to the function of its rule; those files say what each rule is.
--
-- p_org: the organization whose money the batch moves. The caller splits what it receives by
-- organization (the key's, the hold's, the one a command names) and runs one batch per organization, so
-- a transaction never touches two organizations (docs/scale.md). Every statement reads and writes p_org's
-- rows alone: an op that is another organization's finds nothing here (invalid_key, not_found), and the
-- ops whose organization the caller could not tell run with p_org NULL, where every one finds nothing.
--
-- Called by services/billing-ledger/src/holds/hold-ops.repository.ts. packages/db-tools applies this
-- folder after the migrations, a file again whenever its text changes (docs/architecture.md, "SQL
-- functions"); a migration never defines a function.
--
-- p_ops: a JSON array of the contracts' HoldOp (packages/contracts/src/billing.ts), as the caller sent it:
--   {op: "place",   hold_id, key_id, amount_microrub, operation, model, source, owner_ref}  -> hold_place
--   {op: "grant",   hold_id, key_id, amount_microrub, min_microrub, unit_microrub?, operation, source,
--    owner_ref}                                                                            -> allowance_grant
--   {op: "settle",  hold_id, organization_id?, amount_microrub, allowance?}
--                   -> allowance_spend with allowance, else hold_resolve
--   {op: "release", hold_id, organization_id?, reason, allowance?, used_microrub?}
--                   -> allowance_spend with allowance, allowance_close with used_microrub, else hold_resolve
-- plus billing's own {op: "expire", hold_id, reason} (hold_resolve) and the books cross-check's
--   {op: "recover", hold_id, key_id, organization_id, amount_microrub, settled_microrub, operation, model,
--    source, owner_ref, settled_at, recovered_allowance_id?, allowance_amount_microrub?, reason?} (hold_recover).
-- A holder's settle or release (bus or HTTP) names the service whose signature it came with (source):
-- it applies only to a hold that service placed (for a request on an allowance: the allowance). Billing's
-- own ops (expiry, the operator, the audit) name none.
-- p_tz: BUDGET_TIMEZONE, where a budget day starts at 00:00.
-- p_lock_timeout_ms: the longest wait for a row lock; then the batch fails with 55P03 and the caller
--   retries it (a batch stuck behind one organization must not hold its connection indefinitely).
-- p_allowance_max_share: ALLOWANCE_MAX_SHARE, the largest fraction of what a key and its organization
--   have left that one grant may take.
-- p_now: the time of the batch. NULL (production) means now(); tests pass a time to cross midnight.
--
-- One row per op, in order. Each op is idempotent on hold_id and never raises for a business outcome,
-- so one refused op does not abort the others. Outcomes (the caller maps each to an answer in one table):
--   place:   placed | exists | id_reused | foreign | invalid_key | daily_budget_exceeded | insufficient_balance
--            (retry_after: the refusal would not be one if the allowances of the key and its organization
--            were returned; they are within the holders' idle time)
--   grant:   granted | exists | id_reused | foreign | invalid_key | daily_budget_exceeded | insufficient_balance
--            (exists on a release's tombstone too: the allowance is returned released, nothing granted)
--   settle:  settled | already | conflict | exceeds_hold | not_found | foreign
--   release: released | released_unplaced | closing | already | conflict | not_found | foreign
--   (foreign: the op names a source and the hold, or a release's tombstone of its id, is another
--    source's; nothing changes;
--    closing: an allowance's close is recorded and waits for its requests' commands;
--    not_found: a request's command names an allowance billing never granted;
--    conflict on a request's command: its allowance is not active, or the estimate does not fit it)
--   expire:  expired | already | conflict | not_found
--   recover: recovered | already | conflict | invalid_key (the key is not the organization's)
--            | exceeds_allowance (its allowance's signed grant does not cover it)
CREATE OR REPLACE FUNCTION apply_hold_ops(p_org uuid, p_ops jsonb, p_tz text, p_lock_timeout_ms integer,
                                          p_allowance_max_share numeric, p_now timestamptz DEFAULT NULL)
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
  it record;
  r record;
  v_after holds%ROWTYPE;
  v_outcome text;
  v_retry_after boolean;
  v_batch_n bigint[];
  v_batch_holds holds[];
  v_at integer;
BEGIN
  PERFORM hold_ops_lock(p_org, p_ops, p_lock_timeout_ms);
  -- The batch's plain requests on allowances at once; the loop takes every other op (allowance_spend_batch.sql).
  -- That pass costs about as much as six requests op by op (docs/benchmarks.md, "Issue 47"): a batch with
  -- fewer than meter.allowance_batch_min (8; tests set 1 to take the pass always) goes op by op.
  IF (SELECT count(*) FROM jsonb_array_elements(p_ops) e WHERE e ->> 'op' IN ('settle', 'release') AND e ? 'allowance')
     >= COALESCE(NULLIF(current_setting('meter.allowance_batch_min', true), '')::int, 8) THEN
    SELECT array_agg(b.o_n ORDER BY b.o_n), array_agg(b.o_hold ORDER BY b.o_n) INTO v_batch_n, v_batch_holds
    FROM allowance_spend_batch(p_org, p_ops, v_now, v_day) b;
  END IF;

  FOR it IN
    SELECT * FROM ROWS FROM (
      jsonb_to_recordset(p_ops) AS (op text, hold_id uuid, key_id uuid, amount_microrub bigint, operation text,
                                    model text, source text, owner_ref text, reason text, organization_id uuid,
                                    settled_microrub bigint, settled_at timestamptz, min_microrub bigint,
                                    allowance jsonb, used_microrub bigint, unit_microrub bigint,
                                    recovered_allowance_id uuid, allowance_amount_microrub bigint)
    ) WITH ORDINALITY AS x(op, hold_id, key_id, amount_microrub, operation, model, source, owner_ref, reason,
                           organization_id, settled_microrub, settled_at, min_microrub, allowance, used_microrub, unit_microrub,
                           recovered_allowance_id, allowance_amount_microrub, n)
    ORDER BY x.n
  LOOP
    v_at := array_position(v_batch_n, it.n);
    IF v_at IS NOT NULL THEN
      v_outcome := CASE it.op WHEN 'settle' THEN 'settled' ELSE 'released' END;
      v_after := v_batch_holds[v_at];
      v_retry_after := false;
    ELSE
      IF it.op = 'place' THEN
        r := hold_place(p_org, it.hold_id, it.key_id, it.amount_microrub, it.operation, it.model, it.source, it.owner_ref, v_now, v_day);
      ELSIF it.op = 'grant' THEN
        r := allowance_grant(p_org, it.hold_id, it.key_id, it.amount_microrub, it.min_microrub, it.unit_microrub, it.operation,
                             it.source, it.owner_ref, p_allowance_max_share, v_now, v_day, p_tz);
      ELSIF it.op IN ('settle', 'release') AND it.allowance IS NOT NULL THEN
        r := allowance_spend(p_org, it.op, it.hold_id, it.allowance, it.amount_microrub, it.reason, it.source, v_now, v_day);
      ELSIF it.op IN ('settle', 'release', 'expire') THEN
        r := hold_resolve(it.op, it.hold_id, p_org, it.amount_microrub, it.reason, it.used_microrub, it.source, v_now, v_day);
      ELSIF it.op = 'recover' THEN
        r := hold_recover(it.hold_id, it.key_id, p_org, it.amount_microrub, it.settled_microrub, it.operation,
                          it.model, it.source, it.owner_ref, it.settled_at, p_tz, it.recovered_allowance_id,
                          it.allowance_amount_microrub, it.reason);
      ELSE
        RAISE EXCEPTION 'apply_hold_ops: unknown op %', it.op;
      END IF;
      v_outcome := r.o_outcome;
      v_after := r.o_hold;
      v_retry_after := COALESCE(r.o_retry_after, false);
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
    retry_after := v_retry_after;
    RETURN NEXT;
  END LOOP;
END $$;

-- The whole batch in one transaction (HOLD_BATCH_TRANSACTIONS=batch, the default on one PostgreSQL; and
-- the previous release's call: 1.1.0's billing-ledger pods run on these functions during an upgrade or
-- a rollback by pods, docs/deploy.md). It splits the batch by organization as
-- services/billing-ledger/src/holds/op-organizations.ts does (the organization an op names, its key's,
-- that of an op earlier in the batch that makes its hold, its hold's) and runs the parts one
-- after another, in organization order, in its one transaction: one commit for the batch.
CREATE OR REPLACE FUNCTION apply_hold_ops(p_ops jsonb, p_tz text, p_lock_timeout_ms integer, p_allowance_max_share numeric,
                                          p_now timestamptz DEFAULT NULL)
RETURNS TABLE (
  ord bigint, hold_id uuid, outcome text, status hold_status, amount bigint, settled bigint,
  organization_id uuid, key_id uuid, operation text, model text, source text, owner_ref text,
  budget_day text, created_at timestamptz, resolved_at timestamptz,
  kind hold_kind, allowance_id uuid, consumed bigint, usable_until timestamptz, retry_after boolean
)
LANGUAGE sql AS $$
  WITH ops AS (
    SELECT x.n, x.o, x.o ->> 'op' IN ('place', 'grant', 'recover') OR x.o ? 'allowance' AS makes,
           CASE WHEN x.o ->> 'op' IN ('place', 'grant', 'recover') THEN x.o ->> 'key_id' ELSE x.o -> 'allowance' ->> 'key_id' END AS key_text,
           lower(COALESCE(x.o -> 'allowance' ->> 'allowance_id', x.o ->> 'hold_id')) AS hold_text
    FROM jsonb_array_elements(p_ops) WITH ORDINALITY AS x(o, n)
  ),
  direct AS (
    SELECT o.n, o.o, o.makes, o.hold_text,
           COALESCE((o.o ->> 'organization_id')::uuid,
                    (SELECT k.organization_id FROM api_keys k
                     WHERE o.key_text ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' AND k.id = o.key_text::uuid)) AS org
    FROM ops o
  ),
  owned AS (
    SELECT d.n, d.o,
           COALESCE(d.org,
                    (SELECT m.org FROM direct m
                     WHERE m.n < d.n AND m.makes AND m.org IS NOT NULL AND lower(m.o ->> 'hold_id') = d.hold_text LIMIT 1),
                    (SELECT h.organization_id FROM holds h
                     WHERE d.hold_text ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' AND h.id = d.hold_text::uuid
                     ORDER BY h.created_at LIMIT 1)) AS org
    FROM direct d
  ),
  parts AS MATERIALIZED (
    SELECT w.org, jsonb_agg(w.o ORDER BY w.n) AS ops, array_agg(w.n ORDER BY w.n) AS ns
    FROM owned w GROUP BY w.org ORDER BY w.org NULLS LAST
  )
  SELECT p.ns[a.ord], a.hold_id, a.outcome, a.status, a.amount, a.settled, a.organization_id, a.key_id, a.operation, a.model,
         a.source, a.owner_ref, a.budget_day, a.created_at, a.resolved_at, a.kind, a.allowance_id, a.consumed, a.usable_until,
         a.retry_after
  FROM parts p CROSS JOIN LATERAL apply_hold_ops(p.org, p.ops, p_tz, p_lock_timeout_ms, p_allowance_max_share, p_now) a
  ORDER BY 1
$$;
