-- One service's database and its two roles (docs/deploy.md, "Databases and roles"):
--   :owner  the migration role: owns the database and its schema; only the service's migration step logs in with it
--   :app    the runtime role: reads and writes rows, cannot change the schema
-- Run once per service as a superuser (or a role with CREATEROLE and CREATEDB):
--   psql -v db=meter_text -v owner=meter_text_owner -v app=meter_text_app \
--        -v owner_password=... -v app_password=... -f service-database.sql
-- The test cluster's PostgreSQL runs it for every service at its first start (init-service-databases.sh).
\set ON_ERROR_STOP on
CREATE ROLE :"owner" LOGIN PASSWORD :'owner_password';
CREATE ROLE :"app" LOGIN PASSWORD :'app_password';
CREATE DATABASE :"db" OWNER :"owner";
-- No other role may even connect: a service reaches its own database and no other.
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE :"db" TO :"app";
\connect :"db"
ALTER SCHEMA public OWNER TO :"owner";
REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO :"app";
-- Whatever the migrations create (tables, sequences, the SQL functions of billing-ledger) is usable by
-- the runtime role, and only for reading and writing rows.
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"app";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO :"app";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public GRANT EXECUTE ON FUNCTIONS TO :"app";
