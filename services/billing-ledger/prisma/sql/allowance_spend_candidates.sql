-- allowance_spend_candidates: which requests of a batch allowance_spend_batch (allowance_spend_batch.sql)
-- takes in one pass, with what each writes, as one array per field in the order of the batch: its
-- ordinal in p_ops, op, hold id, allowance, organization and key, estimate, cost, reason, operation,
-- model, source (the allowance's) and owner_ref. All NULL when it takes none.
-- Locks those allowances (in id order; their organizations and keys are held already).
--
-- It takes a request's settle or release only when allowance_spend would settle or release it and
-- nothing else in the batch could change that: its hold id is new and unique in the batch; its
-- allowance is an active allowance of the key it names, of the service it came from, not closing,
-- named by no other op of the batch as its hold, and has room for all the batch's requests on it,
-- each of which is such a request; its cost is within its estimate. Only p_org's holds are read: the
-- batch is that organization's.
DROP FUNCTION IF EXISTS allowance_spend_candidates(jsonb);
CREATE OR REPLACE FUNCTION allowance_spend_candidates(
  p_org uuid, p_ops jsonb, OUT o_n bigint[], OUT o_op text[], OUT o_hold_id uuid[], OUT o_allowance_id uuid[], OUT o_organization_id uuid[],
  OUT o_key_id uuid[], OUT o_estimate bigint[], OUT o_cost bigint[], OUT o_reason text[], OUT o_operation text[],
  OUT o_model text[], OUT o_source text[], OUT o_owner_ref text[])
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_n bigint[];
  v_op text[];
  v_hold_id uuid[];
  v_allowance_id uuid[];
  v_key_id uuid[];
  v_estimate bigint[];
  v_cost bigint[];
  v_reason text[];
  v_operation text[];
  v_model text[];
  v_source text[];
  v_owner_ref text[];
  v_named bigint[];
  v_existing uuid[];
  v_allowances jsonb;
BEGIN
  -- The candidates, from the batch alone: a request's settle or release on an allowance, its hold id
  -- unique in the batch and no request's allowance, its allowance no op's hold, its cost within its
  -- estimate, and no placement, grant or recovery before it in the batch (taking it first would give
  -- those the room it frees). `named`: how many of the batch's requests name its allowance.
  WITH ops AS (
    SELECT x.n, x.op, x.hold_id, x.amount_microrub, x.reason, x.source, x.allowance,
           CASE WHEN x.op IN ('settle', 'release') AND jsonb_typeof(x.allowance) = 'object'
                THEN (x.allowance ->> 'allowance_id')::uuid END AS allowance_id
    FROM ROWS FROM (jsonb_to_recordset(p_ops) AS (op text, hold_id uuid, amount_microrub bigint, reason text, source text,
                                                  allowance jsonb))
         WITH ORDINALITY AS x(op, hold_id, amount_microrub, reason, source, allowance, n)
  ),
  requests AS (
    SELECT o.n, o.op, o.hold_id, o.reason, o.source, o.allowance_id,
           count(*) OVER (PARTITION BY o.allowance_id) AS named,
           -- Cast only when it is one: a malformed key id is the per-op rule's conflict, not the batch's error.
           CASE WHEN o.allowance ->> 'key_id' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                THEN (o.allowance ->> 'key_id')::uuid END AS key_id,
           (o.allowance ->> 'reserved_microrub')::bigint AS estimate,
           CASE WHEN o.op = 'settle' THEN o.amount_microrub ELSE 0 END AS cost,
           o.allowance ->> 'operation' AS operation, o.allowance ->> 'model' AS model, o.allowance ->> 'owner_ref' AS owner_ref
    FROM ops o
    WHERE o.allowance_id IS NOT NULL
  )
  SELECT array_agg(r.n ORDER BY r.n), array_agg(r.op ORDER BY r.n), array_agg(r.hold_id ORDER BY r.n),
         array_agg(r.allowance_id ORDER BY r.n), array_agg(r.key_id ORDER BY r.n), array_agg(r.estimate ORDER BY r.n),
         array_agg(r.cost ORDER BY r.n), array_agg(r.reason ORDER BY r.n), array_agg(r.operation ORDER BY r.n),
         array_agg(r.model ORDER BY r.n), array_agg(r.source ORDER BY r.n), array_agg(r.owner_ref ORDER BY r.n),
         array_agg(r.named ORDER BY r.n)
  INTO v_n, v_op, v_hold_id, v_allowance_id, v_key_id, v_estimate, v_cost, v_reason, v_operation, v_model, v_source, v_owner_ref,
       v_named
  FROM requests r
  WHERE r.hold_id IS NOT NULL AND r.allowance_id IS NOT NULL AND r.key_id IS NOT NULL
    AND r.estimate >= 0 AND r.cost IS NOT NULL AND r.cost BETWEEN 0 AND r.estimate
    AND (SELECT count(*) FROM ops d WHERE d.hold_id = r.hold_id) = 1
    AND NOT EXISTS (SELECT 1 FROM ops d WHERE d.hold_id = r.allowance_id OR d.allowance_id = r.hold_id)
    AND NOT EXISTS (SELECT 1 FROM ops d WHERE d.n < r.n AND d.op IN ('place', 'grant', 'recover'));

  IF v_n IS NULL THEN
    RETURN;
  END IF;

  -- Tables are read by primary key through arrays (`= ANY`, here and beside each join below): a join
  -- with the batch's rows may be planned as a scan of every hold (docs/benchmarks.md, "Issue 32"). The allowances are locked in id
  -- order (their organizations and keys are held already).
  v_existing := ARRAY(SELECT h.id FROM holds h WHERE h.organization_id = p_org AND h.id = ANY (v_hold_id));
  WITH locked AS (
    SELECT h.id, h.organization_id, h.key_id, h.source, h.kind, h.status, h.closing_used, h.consumed, h.amount
    FROM holds h WHERE h.organization_id = p_org AND h.id = ANY (v_allowance_id) ORDER BY h.id FOR UPDATE
  )
  SELECT jsonb_agg(to_jsonb(l)) INTO v_allowances FROM locked l;

  -- The candidates allowance_spend would settle or release: a new hold on an active allowance of its
  -- key and source, not closing, with room for every candidate of the batch on it. An allowance goes
  -- whole or not at all: a request of it left to the loop could otherwise find its room taken first.
  WITH candidates AS (
    SELECT r.*, a.organization_id, a.source AS allowance_source, a.consumed, a.amount AS granted,
           sum(r.estimate) OVER (PARTITION BY r.allowance_id) AS batch_estimate,
           count(*) OVER (PARTITION BY r.allowance_id) AS taken
    FROM unnest(v_n, v_op, v_hold_id, v_allowance_id, v_key_id, v_estimate, v_cost, v_reason, v_operation, v_model, v_source,
                v_owner_ref, v_named)
         AS r(n, op, hold_id, allowance_id, key_id, estimate, cost, reason, operation, model, source, owner_ref, named)
    JOIN jsonb_to_recordset(v_allowances) AS a(id uuid, organization_id uuid, key_id uuid, source text, kind hold_kind,
                                               status hold_status, closing_used bigint, consumed bigint, amount bigint)
      ON a.id = r.allowance_id
    WHERE a.kind = 'allowance' AND a.status = 'active' AND a.closing_used IS NULL AND a.organization_id IS NOT NULL
      AND a.key_id = r.key_id AND (r.source IS NULL OR a.source = r.source)
      AND NOT (r.hold_id = ANY (v_existing))
  )
  SELECT array_agg(f.n ORDER BY f.n), array_agg(f.op ORDER BY f.n), array_agg(f.hold_id ORDER BY f.n),
         array_agg(f.allowance_id ORDER BY f.n), array_agg(f.organization_id ORDER BY f.n), array_agg(f.key_id ORDER BY f.n),
         array_agg(f.estimate ORDER BY f.n), array_agg(f.cost ORDER BY f.n), array_agg(f.reason ORDER BY f.n),
         array_agg(f.operation ORDER BY f.n), array_agg(f.model ORDER BY f.n), array_agg(f.allowance_source ORDER BY f.n),
         array_agg(f.owner_ref ORDER BY f.n)
  INTO o_n, o_op, o_hold_id, o_allowance_id, o_organization_id, o_key_id, o_estimate, o_cost, o_reason, o_operation, o_model,
       o_source, o_owner_ref
  FROM candidates f
  WHERE f.taken = f.named AND f.consumed + f.batch_estimate <= f.granted;
END $$;
