-- hold_reserve: the writes that reserve money under a new hold, one place for a request's placement
-- (hold_place) and an allowance's grant (allowance_grant): the hold row, the key's and organization's
-- `reserved`, and the ledger's hold entry. The caller has locked the key's and organization's rows and
-- checked the room. When the id exists already, a release of it committed after the caller's check
-- (hold_resolve's tombstone): it wins, nothing is reserved, and o_hold is that row; o_hold is null when
-- another organization holds the id (the caller's id_reused: hold ids stay unique across organizations
-- for one more release, docs/scale.md).
CREATE OR REPLACE FUNCTION hold_reserve(p_hold_id uuid, p_organization_id uuid, p_key_id uuid, p_amount bigint,
                                        p_kind hold_kind, p_operation text, p_model text, p_source text,
                                        p_owner_ref text, p_now timestamptz, p_usable_until timestamptz,
                                        OUT o_reserved boolean, OUT o_hold holds)
LANGUAGE plpgsql AS $$
DECLARE
  v_org record;
BEGIN
  INSERT INTO holds (id, organization_id, key_id, amount, status, kind, operation, model, source, owner_ref, created_at, usable_until)
  VALUES (p_hold_id, p_organization_id, p_key_id, p_amount, 'active', p_kind, p_operation, p_model, p_source, p_owner_ref, p_now,
          p_usable_until)
  ON CONFLICT DO NOTHING
  RETURNING * INTO o_hold;
  o_reserved := FOUND;
  IF NOT o_reserved THEN
    SELECT * INTO o_hold FROM holds h WHERE h.organization_id = p_organization_id AND h.id = p_hold_id;
    RETURN;
  END IF;
  UPDATE api_keys k SET reserved = k.reserved + p_amount WHERE k.organization_id = p_organization_id AND k.id = p_key_id;
  UPDATE organizations o SET reserved = o.reserved + p_amount WHERE o.id = p_organization_id
    RETURNING o.balance, o.reserved INTO v_org;
  -- An allowance's grant is told apart in the ledger by its reference (docs/api.md, "Allowances").
  INSERT INTO ledger_entries (organization_id, key_id, hold_id, kind, amount, balance_after, reserved_after, reference, created_at)
  VALUES (p_organization_id, p_key_id, p_hold_id, 'hold', p_amount, v_org.balance, v_org.reserved,
          CASE WHEN p_kind = 'allowance' THEN 'allowance' END, p_now);
END $$;
