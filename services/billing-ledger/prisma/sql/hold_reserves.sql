-- hold_reserves: what a hold still reserves while it is active, in one place for every reader and writer
-- of reservations: all of a request's hold (its consumed is 0), an allowance's amount less the estimates
-- of its requests billing has recorded (consumed). hold_resolve and allowance_return_rest free this much,
-- hold_place counts it for a refusal's retry_after, and the books check
-- (services/billing-ledger/src/accounts/books.repository.ts), the cabinet's ledger lines
-- (ledger-lines.repository.ts) and its spend page (spend.repository.ts) sum it.
--
-- An immutable SQL function of the row, which PostgreSQL inlines into the query that calls it
-- (`hold_reserves(h)` on a table alias reads as h.amount - h.consumed): no call per row.
CREATE OR REPLACE FUNCTION hold_reserves(p_hold holds)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT p_hold.amount - p_hold.consumed
$$;
