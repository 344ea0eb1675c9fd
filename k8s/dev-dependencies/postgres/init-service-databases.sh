#!/bin/bash
# The postgres image runs this once, when it creates its data folder (/docker-entrypoint-initdb.d):
# every service's database with its owner and runtime roles, passwords from the environment
# (<SERVICE>_OWNER_PASSWORD, <SERVICE>_APP_PASSWORD: the Secret meter-dev-dependencies).
set -euo pipefail
for service in billing_ledger files media_jobs mcp text; do
  upper="${service^^}"
  owner_password_var="${upper}_OWNER_PASSWORD"
  app_password_var="${upper}_APP_PASSWORD"
  psql --username "$POSTGRES_USER" --dbname postgres \
    -v db="meter_${service}" -v owner="meter_${service}_owner" -v app="meter_${service}_app" \
    -v owner_password="${!owner_password_var}" -v app_password="${!app_password_var}" \
    -f /docker-entrypoint-initdb.d/service-database.sql.in
done
