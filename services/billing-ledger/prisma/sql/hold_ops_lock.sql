-- hold_ops_lock: the locks of a batch, taken before any of its ops runs. Called by apply_hold_ops
-- (services/billing-ledger/prisma/sql/apply_hold_ops.sql), first thing in its transaction. A batch is
-- one organization's (p_org): it locks that organization's rows and nothing of any other.
--
-- First the organization's row, then every key row of it the batch touches, in id order, and only
-- then the ops in arrival order (a request's command locks its allowance's hold row there). Every
-- writer of these rows takes an organization before a key, so two batches (from any number of
-- replicas) wait for each other in one direction only and never deadlock; since a batch always holds
-- its organization's row, one organization's batches run one after another, and a release that finds
-- no hold while a placement of the same id commits meanwhile sees that placement whole.
--
-- p_lock_timeout_ms bounds each wait for a lock, for the rest of the transaction: then it fails with
-- 55P03 and the caller retries (a batch stuck behind one organization must not hold its connection).
DROP FUNCTION IF EXISTS hold_ops_lock(jsonb, integer);
CREATE OR REPLACE FUNCTION hold_ops_lock(p_org uuid, p_ops jsonb, p_lock_timeout_ms integer)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_key_ids uuid[];
  v_hold_ids uuid[];
  v_keys uuid[];
BEGIN
  PERFORM set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
  PERFORM 1 FROM organizations o WHERE o.id = p_org FOR NO KEY UPDATE;

  -- The keys whose money the batch moves: each placement's or grant's key, each other op's hold's key,
  -- and the key of the allowance a request's command names. Read without locks; the locks below are
  -- what the ops rely on. The ids go in as arrays (`= ANY`), which are read through the primary keys
  -- whatever the planner knows of the tables; a join with the batch's rows was planned as a scan of
  -- every hold (docs/benchmarks.md, "Issue 32").
  SELECT array_agg(x.key_id) FILTER (WHERE x.op IN ('place', 'grant', 'recover')),
         array_agg(x.hold_id) FILTER (WHERE x.op NOT IN ('place', 'grant', 'recover'))
           || array_agg((x.allowance ->> 'allowance_id')::uuid) FILTER (WHERE x.op IN ('settle', 'release') AND x.allowance IS NOT NULL)
  INTO v_key_ids, v_hold_ids
  FROM jsonb_to_recordset(p_ops) AS x(op text, hold_id uuid, key_id uuid, allowance jsonb);

  WITH touched AS (
    SELECT k.id AS key FROM api_keys k WHERE k.organization_id = p_org AND k.id = ANY (v_key_ids)
    UNION ALL
    SELECT h.key_id FROM holds h WHERE h.organization_id = p_org AND h.id = ANY (v_hold_ids)
  )
  SELECT array_agg(DISTINCT t.key ORDER BY t.key) FILTER (WHERE t.key IS NOT NULL) INTO v_keys FROM touched t;

  PERFORM 1 FROM api_keys k WHERE k.organization_id = p_org AND k.id = ANY (v_keys) ORDER BY k.id FOR NO KEY UPDATE;
END $$;
