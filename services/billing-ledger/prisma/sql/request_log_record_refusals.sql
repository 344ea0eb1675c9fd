-- request_log_record_refusals: writes the refusals the gateway collected (docs/api.md, "Request log")
-- into the request log, bounded. Identical refusals of a key (endpoint, status, code, model) within one
-- UTC hour are one entry whose count grows, created_at the first and completed_at the last. A key
-- opens at most p_itemized such entries an hour; past that its refusals of the hour collapse by status
-- and code alone (model NULL, the endpoint of the first), so a flood of refusals naming ever new models
-- adds nothing beyond one entry per code. Each refusal also counts in request_log_hourly and, on its
-- budget day of p_timezone (BUDGET_TIMEZONE), in request_log_daily (analytics).
-- The refusals are one organization's (p_org; the caller splits them, docs/scale.md): a key that is not
-- its key drops its refusals. A lock per key makes the bound exact when two batches hold the same key
-- (keys taken in order: no deadlock between them).
-- Called by services/billing-ledger/src/request-log/pg-request-log.store.ts.
DROP FUNCTION IF EXISTS request_log_record_refusals(jsonb, int, text);
CREATE OR REPLACE FUNCTION request_log_record_refusals(p_org uuid, p_refusals jsonb, p_itemized int, p_timezone text)
RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  v_org uuid;
  v_hour timestamptz;
  v_id uuid;
  v_model text;
  v_entries int;
  v_recorded int := 0;
BEGIN
  FOR r IN
    SELECT x.* FROM jsonb_to_recordset(p_refusals) AS x(key_id uuid, endpoint text, model text, status smallint, code text, message text,
                                                       count int, first_at timestamptz, last_at timestamptz, request_id text)
    ORDER BY x.key_id, x.first_at
  LOOP
    SELECT k.organization_id INTO v_org FROM api_keys k WHERE k.organization_id = p_org AND k.id = r.key_id;
    CONTINUE WHEN NOT FOUND;
    PERFORM pg_advisory_xact_lock(hashtext('request_log_refusals'), hashtext(r.key_id::text));
    v_hour := date_trunc('hour', r.first_at, 'UTC');
    v_model := r.model;
    v_id := md5(concat_ws('|', r.key_id, v_hour, r.endpoint, r.status, r.code, coalesce(r.model, '')))::uuid;
    UPDATE request_log l
    SET count = least(l.count::bigint + r.count, 2147483647)::int, completed_at = greatest(l.completed_at, r.last_at),
        error_message = r.message, request_id = coalesce(r.request_id, l.request_id)
    WHERE l.organization_id = p_org AND l.hold_id = v_id;
    IF NOT FOUND THEN
      SELECT count(*) INTO v_entries FROM request_log l
      WHERE l.organization_id = p_org AND l.key_id = r.key_id AND l.refused AND l.created_at >= v_hour AND l.created_at < v_hour + interval '1 hour';
      IF v_entries >= p_itemized THEN
        v_model := NULL;
        v_id := md5(concat_ws('|', r.key_id, v_hour, '*', r.status, r.code))::uuid;
      END IF;
      INSERT INTO request_log AS l (hold_id, organization_id, key_id, created_at, completed_at, endpoint, model, status, succeeded, refused,
                                    estimated_cost, cost, latency_ms, request_id, error_code, error_message, count)
      VALUES (v_id, v_org, r.key_id, r.first_at, r.last_at, r.endpoint, v_model, r.status, false, true,
              0, 0, 0, r.request_id, r.code, r.message, r.count)
      ON CONFLICT (organization_id, hold_id) DO UPDATE
      SET count = least(l.count::bigint + excluded.count, 2147483647)::int, completed_at = greatest(l.completed_at, excluded.completed_at),
          error_message = excluded.error_message, request_id = coalesce(excluded.request_id, l.request_id);
    END IF;
    INSERT INTO request_log_hourly AS h (organization_id, hour, key_id, model, refused)
    VALUES (v_org, v_hour, r.key_id, coalesce(v_model, ''), r.count)
    ON CONFLICT (organization_id, hour, key_id, model) DO UPDATE SET refused = least(h.refused::bigint + excluded.refused, 2147483647)::int;
    INSERT INTO request_log_daily AS d (organization_id, day, key_id, model, refused)
    VALUES (v_org, (r.first_at AT TIME ZONE p_timezone)::date, r.key_id, coalesce(v_model, ''), r.count)
    ON CONFLICT (organization_id, day, key_id, model) DO UPDATE SET refused = least(d.refused::bigint + excluded.refused, 2147483647)::int;
    v_recorded := v_recorded + 1;
  END LOOP;
  RETURN v_recorded;
END $$;
