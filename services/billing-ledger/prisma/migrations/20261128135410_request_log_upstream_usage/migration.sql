-- A media job on an upstream model: the tokens the upstream reported, for the operator (docs/api.md,
-- "Media on upstream models"); its tariff's usage stays in unit and quantity.
-- AlterTable
ALTER TABLE "request_log" ADD COLUMN     "upstream_input_tokens" INTEGER,
ADD COLUMN     "upstream_output_tokens" INTEGER;
