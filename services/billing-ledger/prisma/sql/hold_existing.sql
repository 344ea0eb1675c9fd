-- hold_existing: the answer to a placement or grant whose id is already taken, for hold_place and
-- allowance_grant alike; o_outcome is null when the id is free. A replay must describe the same
-- reservation (the key, the kind, and the amount where p_amount is given: a grant may have been given less
-- than it asked); a release's tombstone (no key) is returned as it is, so a placement or grant
-- that arrives after its caller gave up reserves nothing. Another service's tombstone does not speak for
-- this caller's id (docs/api.md, "Holds belong to their source"). Only p_org's holds are read: an id
-- another organization holds is hold_reserve's to find (its insert conflicts).
DROP FUNCTION IF EXISTS hold_existing(uuid, uuid, text, hold_kind, bigint);
CREATE OR REPLACE FUNCTION hold_existing(p_org uuid, p_hold_id uuid, p_key_id uuid, p_source text, p_kind hold_kind, p_amount bigint,
                                         OUT o_outcome text, OUT o_hold holds)
LANGUAGE plpgsql AS $$
BEGIN
  SELECT * INTO o_hold FROM holds h WHERE h.organization_id = p_org AND h.id = p_hold_id;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  o_outcome := CASE
    WHEN o_hold.key_id IS NULL AND o_hold.source <> p_source THEN 'foreign'
    WHEN o_hold.key_id IS NOT NULL
      AND (o_hold.key_id IS DISTINCT FROM p_key_id OR o_hold.kind <> p_kind OR o_hold.amount <> COALESCE(p_amount, o_hold.amount)) THEN 'id_reused'
    ELSE 'exists'
  END;
END $$;
