import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { repoPath } from "./support/repo";

/**
 * k8s/overlays/prod-ha/postgres-roles.sql on this machine's PostgreSQL, the way CloudNativePG runs it
 * (postInitApplicationSQLRefs): as the superuser in a database it has just made for its owner, before
 * the Cluster's managed role gives the runtime role its login. Then the two roles hold exactly the
 * rights of k8s/dev-dependencies/postgres/service-database.sql.
 */
const db = `meter_roles_${randomBytes(4).toString("hex")}`;
const owner = `${db}_owner`;
const app = `${db}_app`;
const stranger = `${db}_stranger`;

const psql = (user: string, database: string, sql: string): string =>
  execFileSync("psql", ["-h", "127.0.0.1", "-U", user, "-d", database, "-v", "ON_ERROR_STOP=1", "-AtX", "-c", sql], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
const refused = (user: string, database: string, sql: string): string => {
  try {
    psql(user, database, sql);
  } catch (error) {
    return String((error as { stderr?: string }).stderr);
  }
  throw new Error(`${user} was allowed: ${sql}`);
};

beforeAll(() => {
  // What CloudNativePG's initdb bootstrap does before the script: the owner, and the database it owns.
  psql("postgres", "postgres", `CREATE ROLE ${owner} LOGIN; CREATE ROLE ${stranger} LOGIN`);
  psql("postgres", "postgres", `CREATE DATABASE ${db} OWNER ${owner}`);
  execFileSync("psql", [
    "-h",
    "127.0.0.1",
    "-U",
    "postgres",
    "-d",
    db,
    "-v",
    "ON_ERROR_STOP=1",
    "-qX",
    "-f",
    repoPath("k8s/overlays/prod-ha/postgres-roles.sql"),
  ]);
  // What the Cluster's managed role does next.
  psql("postgres", "postgres", `ALTER ROLE ${app} LOGIN`);
});
afterAll(() => {
  psql("postgres", "postgres", `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  psql("postgres", "postgres", `DROP ROLE IF EXISTS ${app}; DROP ROLE IF EXISTS ${owner}; DROP ROLE IF EXISTS ${stranger}`);
});

it("lets the runtime role read and write what the owner's migrations create, and nothing more", () => {
  psql(
    owner,
    db,
    "CREATE TABLE holds (id bigserial PRIMARY KEY, amount bigint); CREATE FUNCTION doubled(x bigint) RETURNS bigint LANGUAGE sql AS 'SELECT x * 2'",
  );
  expect(psql(app, db, "INSERT INTO holds (amount) VALUES (5) RETURNING doubled(amount)").split("\n")[0]).toBe("10");
  expect(psql(app, db, "UPDATE holds SET amount = 6 RETURNING amount; DELETE FROM holds").trim()).toMatch(/^6/);
  expect(refused(app, db, "CREATE TABLE mine (id int)")).toMatch(/permission denied for schema public/);
  expect(refused(app, db, "ALTER TABLE holds ADD COLUMN x int")).toMatch(/must be owner of table holds/);
});

it("lets no other role connect to the database", () => {
  expect(refused(stranger, db, "SELECT 1")).toMatch(/permission denied for database/);
});

it("can run again on the same database (the runtime role already there)", () => {
  expect(() =>
    execFileSync("psql", [
      "-h",
      "127.0.0.1",
      "-U",
      "postgres",
      "-d",
      db,
      "-v",
      "ON_ERROR_STOP=1",
      "-qX",
      "-f",
      repoPath("k8s/overlays/prod-ha/postgres-roles.sql"),
    ]),
  ).not.toThrow();
});
