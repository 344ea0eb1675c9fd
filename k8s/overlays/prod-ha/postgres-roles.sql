-- The runtime role of a service's database and the rights of both roles, as
-- k8s/dev-dependencies/postgres/service-database.sql gives them (docs/deploy.md, "Databases and roles"), for
-- a CloudNativePG cluster: its superuser runs this once in the new database (postInitApplicationSQLRefs of
-- postgres.yaml), after creating the database and its owner <database>_owner. The runtime role
-- <database>_app is made here without a login; the Cluster's managed role gives it its login and password.
DO $$
DECLARE
  db text := current_database();
  owner text := current_database() || '_owner';
  app text := current_database() || '_app';
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = app) THEN
    EXECUTE format('CREATE ROLE %I NOLOGIN', app);
  END IF;
  -- No other role may even connect: a service reaches its own database and no other.
  EXECUTE format('REVOKE ALL ON DATABASE %I FROM PUBLIC', db);
  EXECUTE format('GRANT CONNECT, TEMPORARY ON DATABASE %I TO %I', db, app);
  EXECUTE format('ALTER SCHEMA public OWNER TO %I', owner);
  REVOKE ALL ON SCHEMA public FROM PUBLIC;
  EXECUTE format('GRANT USAGE ON SCHEMA public TO %I', app);
  -- Whatever the migrations create is usable by the runtime role, and only for reading and writing rows.
  EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE %I IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO %I', owner, app);
  EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE %I IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO %I', owner, app);
  EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE %I IN SCHEMA public GRANT EXECUTE ON FUNCTIONS TO %I', owner, app);
END
$$;
