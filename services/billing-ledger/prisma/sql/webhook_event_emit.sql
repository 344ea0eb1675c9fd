-- webhook_event_emit: records one event of an organization and, in the same transaction, a pending
-- delivery to each of its endpoints subscribed to the event's type (or only to p_endpoint: a test
-- event). The body is built here once and stored as text: it is exactly what is signed and sent, on
-- every retry (docs/api.md, "Webhooks"). A p_dedupe already recorded makes it a no-op (NULL), which is
-- how an alert is sent once per crossing. The webhook worker
-- (services/billing-ledger/src/webhooks/webhook-delivery.service.ts) sends the deliveries; the triggers
-- of webhook_alert_triggers.sql and the key and webhook repositories call this.
CREATE OR REPLACE FUNCTION webhook_event_emit(p_org uuid, p_type text, p_dedupe text, p_data jsonb, p_endpoint uuid DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  v_id text := 'msg_' || replace(gen_random_uuid()::text, '-', '');
  v_now timestamptz := clock_timestamp();
BEGIN
  INSERT INTO webhook_events (id, organization_id, type, dedupe_key, body, created_at)
  VALUES (v_id, p_org, p_type, p_dedupe,
          jsonb_build_object('type', p_type,
                             'timestamp', to_char(v_now AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                             'data', p_data)::text,
          v_now)
  ON CONFLICT (organization_id, dedupe_key) DO NOTHING;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  INSERT INTO webhook_deliveries (id, organization_id, endpoint_id, event_id, status, next_attempt_at, created_at)
  SELECT gen_random_uuid(), e.organization_id, e.id, v_id, 'pending', v_now, v_now
  FROM webhook_endpoints e
  WHERE e.organization_id = p_org
    AND (CASE WHEN p_endpoint IS NULL THEN p_type = ANY (e.events) ELSE e.id = p_endpoint END);
  RETURN v_id;
END $$;
