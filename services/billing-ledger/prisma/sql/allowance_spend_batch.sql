-- allowance_spend_batch: allowance_spend (services/billing-ledger/prisma/sql/allowance_spend.sql) for
-- the plain requests of a batch at once, a statement per table instead of ten per request: the
-- request's hold and its two ledger entries, the allowance's `consumed`, the key's `reserved`, the
-- budget day's spend and the organization, each written once with the batch's sums. Called by
-- apply_hold_ops (apply_hold_ops.sql) before its loop, after hold_ops_lock took the organizations and
-- keys; the ops it returns are done, the loop hands every other op to its rule as before.
--
-- Which requests it takes, allowance_spend_candidates (allowance_spend_candidates.sql) decides; the
-- rest (replays, conflicts, a closing allowance's last requests) goes op by op. Taking these first
-- moves them ahead of their neighbours in the batch, which are only other settlements, releases and
-- expiries (never a placement, grant or recovery, whose outcome depends on the room these free): the
-- outcomes are those of the ops one at a time, and each ledger entry's figures are those right after it.
--
-- Returns the ordinals (1-based positions in p_ops) it applied, with each request's new hold. The batch
-- is p_org's: every statement reads and writes that organization's rows alone.
DROP FUNCTION IF EXISTS allowance_spend_batch(jsonb, timestamptz, date);
CREATE OR REPLACE FUNCTION allowance_spend_batch(p_org uuid, p_ops jsonb, p_now timestamptz, p_day date)
RETURNS TABLE (o_n bigint, o_hold holds)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  -- One array per field of the requests it takes, in the batch's order.
  b record;
BEGIN
  b := allowance_spend_candidates(p_org, p_ops);
  IF b.o_n IS NULL THEN
    RETURN;
  END IF;

  -- The requests' holds, already resolved (allowance_spend says why).
  RETURN QUERY
  WITH inserted AS (
    INSERT INTO holds (id, organization_id, key_id, amount, settled, status, kind, allowance_id, operation, model, source,
                       owner_ref, budget_day, reason, created_at, resolved_at)
    SELECT r.hold_id, r.org_id, r.key_id, r.estimate,
           CASE WHEN r.op = 'settle' THEN r.cost END,
           CASE WHEN r.op = 'settle' THEN 'settled'::hold_status ELSE 'released'::hold_status END,
           'request', r.allowance_id, r.operation, r.model, r.source, r.owner_ref,
           CASE WHEN r.op = 'settle' THEN p_day END, r.reason, p_now, p_now
    FROM unnest(b.o_n, b.o_op, b.o_hold_id, b.o_allowance_id, b.o_organization_id, b.o_key_id, b.o_estimate, b.o_cost,
                b.o_reason, b.o_operation, b.o_model, b.o_source, b.o_owner_ref)
         AS r(n, op, hold_id, allowance_id, org_id, key_id, estimate, cost, reason, operation, model, source, owner_ref)
    ORDER BY r.n
    RETURNING *
  )
  SELECT r.n, (i.*)::holds FROM inserted i JOIN unnest(b.o_hold_id, b.o_n) AS r(hold_id, n) ON r.hold_id = i.id ORDER BY r.n;

  -- Each request's two entries, as allowance_spend writes them, with the organization's running figures
  -- (read before its one update below): the hold (the reservation only moved), then its settle or release.
  INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after, reference, created_at)
  SELECT r.org_id, r.key_id, r.hold_id, e.kind, e.amount, e.balance_after, e.reserved_after, e.reference, p_now
  FROM (
    SELECT s.*, o.balance - sum(s.cost) OVER w AS balance_after, o.reserved - sum(s.estimate) OVER w AS reserved_after
    FROM unnest(b.o_n, b.o_op, b.o_hold_id, b.o_organization_id, b.o_key_id, b.o_estimate, b.o_cost, b.o_reason)
         AS s(n, op, hold_id, org_id, key_id, estimate, cost, reason)
    JOIN organizations o ON o.id = s.org_id AND o.id = p_org
    WINDOW w AS (PARTITION BY s.org_id ORDER BY s.n)
  ) r
  CROSS JOIN LATERAL (VALUES
    (1, 'hold'::ledger_kind, r.estimate, r.balance_after + r.cost, r.reserved_after + r.estimate, NULL::text),
    (2, r.op::ledger_kind, CASE WHEN r.op = 'settle' THEN r.cost ELSE r.estimate END, r.balance_after, r.reserved_after,
     CASE WHEN r.op = 'settle' THEN NULL ELSE r.reason END)
  ) AS e(i, kind, amount, balance_after, reserved_after, reference)
  ORDER BY r.n, e.i;

  UPDATE organizations o SET balance = o.balance - t.cost, reserved = o.reserved - t.estimate
  FROM (SELECT s.org_id, sum(s.cost) AS cost, sum(s.estimate) AS estimate
        FROM unnest(b.o_organization_id, b.o_cost, b.o_estimate) AS s(org_id, cost, estimate) GROUP BY s.org_id) t
  WHERE o.id = t.org_id AND o.id = p_org;

  UPDATE api_keys k SET reserved = k.reserved - t.estimate
  FROM (SELECT s.key_id, sum(s.estimate) AS estimate FROM unnest(b.o_key_id, b.o_estimate) AS s(key_id, estimate) GROUP BY s.key_id) t
  WHERE k.organization_id = p_org AND k.id = t.key_id AND k.id = ANY (b.o_key_id);

  UPDATE holds a SET consumed = a.consumed + t.estimate
  FROM (SELECT s.allowance_id, sum(s.estimate) AS estimate
        FROM unnest(b.o_allowance_id, b.o_estimate) AS s(allowance_id, estimate) GROUP BY s.allowance_id) t
  WHERE a.organization_id = p_org AND a.id = t.allowance_id AND a.id = ANY (b.o_allowance_id);

  INSERT INTO key_daily_usage AS u (organization_id, key_id, day, spent)
  SELECT s.org_id, s.key_id, p_day, sum(s.cost) FROM unnest(b.o_organization_id, b.o_key_id, b.o_cost) AS s(org_id, key_id, cost)
  GROUP BY s.org_id, s.key_id HAVING sum(s.cost) > 0
  ON CONFLICT (organization_id, key_id, day) DO UPDATE SET spent = u.spent + EXCLUDED.spent;
END $$;
