-- Key edits and alerts (issue 35, docs/api.md "Keys"): a key may expire, names the percents of its daily
-- budget whose crossing sends budget.threshold, and an organization may name the balance under which
-- balance.low is sent.
-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "budget_alert_percents" INTEGER[] NOT NULL DEFAULT ARRAY[]::INTEGER[],
ADD COLUMN     "expires_at" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "organizations" ADD COLUMN     "low_balance_microrub" BIGINT;

-- Alert percents: at most 10, each 1..100, sorted and unique (each next one greater; a comparison past
-- the end is NULL, which a CHECK lets pass), one-dimensional from index 1, no NULL element.
ALTER TABLE api_keys ADD CONSTRAINT api_keys_budget_alert_percents_valid CHECK (
  cardinality(budget_alert_percents) <= 10
  AND (cardinality(budget_alert_percents) = 0
       OR (array_ndims(budget_alert_percents) = 1 AND array_lower(budget_alert_percents, 1) = 1))
  AND array_position(budget_alert_percents, NULL) IS NULL
  AND 1 <= ALL (budget_alert_percents) AND 100 >= ALL (budget_alert_percents)
  AND budget_alert_percents[1] < budget_alert_percents[2] AND budget_alert_percents[2] < budget_alert_percents[3]
  AND budget_alert_percents[3] < budget_alert_percents[4] AND budget_alert_percents[4] < budget_alert_percents[5]
  AND budget_alert_percents[5] < budget_alert_percents[6] AND budget_alert_percents[6] < budget_alert_percents[7]
  AND budget_alert_percents[7] < budget_alert_percents[8] AND budget_alert_percents[8] < budget_alert_percents[9]
  AND budget_alert_percents[9] < budget_alert_percents[10]
);
ALTER TABLE organizations ADD CONSTRAINT organizations_low_balance_nonnegative
  CHECK (low_balance_microrub IS NULL OR low_balance_microrub >= 0);
