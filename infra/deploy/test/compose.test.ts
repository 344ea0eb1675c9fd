import { checkCompose, exampleVariables } from "./support/compose-checks";
import { interpolate, loadCompose, rawEnvironment, type ComposeFile, type ComposeService } from "./support/compose-file";

/**
 * docker-compose.yml cannot be run on the development machines (no Docker engine), so it is checked
 * here: against the Compose Specification's schema, and against the code it deploys (each
 * deployable's environment through its own loadConfig, every address to a service of the file, the
 * migration steps and roles, support/compose-checks.ts).
 */
describe("docker-compose.yml", () => {
  const compose = loadCompose();
  const variables = exampleVariables(compose);

  it("follows the Compose Specification and would start every deployable with a configuration it accepts, in a working order", async () => {
    expect(await checkCompose(compose, variables)).toEqual([]);
  });

  it("has no default for the secrets: compose refuses to start without them", () => {
    for (const secret of ["INTERNAL_PUBLIC_KEYS", "ADMIN_TOKEN", "TEXT_INTERNAL_SIGNING_KEY", "FILES_UPLOAD_SECRET"]) {
      const values = Object.values(compose.services).flatMap((service) => Object.values(rawEnvironment(service)).filter((v) => v.includes(`\${${secret}`)));
      expect(values.length).toBeGreaterThan(0);
      for (const value of values) {
        expect(value).toMatch(new RegExp(`\\$\\{${secret}:\\?[^}]+\\}`));
        expect(() => interpolate(value, {})).toThrow(secret);
      }
    }
  });

  describe("fails on a broken file", () => {
    const service = (c: ComposeFile, name: string): ComposeService => {
      const found = c.services[name];
      if (!found) throw new Error(`no service ${name} in docker-compose.yml`);
      return found;
    };
    const env = (c: ComposeFile, name: string) => service(c, name).environment as Record<string, string>;
    const cases: [string, (c: ComposeFile) => void, RegExp][] = [
      [
        "a misspelt key",
        (c) => void ((service(c, "text") as Record<string, unknown>).imagePullPolicyy = "always"),
        /services\/text: must NOT have additional properties \{"additionalProperty":"imagePullPolicyy"\}/,
      ],
      ["a third-party image on latest", (c) => void (service(c, "postgres").image = "postgres:latest"), /postgres: postgres:latest is not pinned/],
      ["a required setting missing", (c) => delete env(c, "gateway").ADMIN_TOKEN, /gateway\/src\/main\.ts would not start: [\s\S]*ADMIN_TOKEN/],
      ["a URL naming no service", (c) => void (env(c, "text").BILLING_LEDGER_URL = "http://billing:8084"), /BILLING_LEDGER_URL names host "billing"/],
      ["a port nothing listens on", (c) => void (env(c, "files-worker").CLAMD_PORT = "3311"), /files-worker: CLAMD_HOST uses port 3311/],
      ["a worker without a healthcheck", (c) => delete service(c, "files-worker").healthcheck, /files-worker: no HTTP healthcheck/],
      ["a misspelt setting", (c) => void (env(c, "text").TEXT_SYNC_TIMOUT_MS = "1000"), /sets TEXT_SYNC_TIMOUT_MS/],
      ["a server left on 127.0.0.1", (c) => void (env(c, "billing-ledger").HOST = "127.0.0.1"), /HOST is 127\.0\.0\.1/],
      ["another deployable's image", (c) => void (service(c, "mcp").image = "meter-text:local"), /mcp: runs meter-text:local but builds target mcp/],
      [
        "a service that starts before its migrations",
        (c) => void delete (service(c, "text").depends_on as Record<string, unknown>)["text-migrate"],
        /text: starts without waiting for text-migrate/,
      ],
      [
        "the process given the migration role",
        (c) => void (env(c, "text").TEXT_DATABASE_URL = env(c, "text-migrate").TEXT_MIGRATION_DATABASE_URL!),
        /text: runs as its migration role/,
      ],
      [
        "the owner's URL given to a worker",
        (c) => void (env(c, "files-worker").FILES_DATABASE_URL = env(c, "files-migrate").FILES_MIGRATION_DATABASE_URL!),
        /files-worker: gets the owner role's URL as FILES_DATABASE_URL/,
      ],
      [
        "a worker that starts before its service's migrations",
        (c) => void delete (service(c, "media-jobs-worker").depends_on as Record<string, unknown>)["media-jobs-migrate"],
        /media-jobs-worker: starts without waiting for media-jobs-migrate/,
      ],
      [
        "a migration step of another version than its service",
        (c) => void (service(c, "mcp-migrate").image = "meter-mcp:0.9.0"),
        /mcp-migrate: runs meter-mcp:0\.9\.0, mcp runs meter-mcp:local: not the same version/,
      ],
      [
        "a migration step given the service's secrets",
        (c) => void (env(c, "billing-ledger-migrate").INTERNAL_SIGNING_KEY = env(c, "billing-ledger").INTERNAL_SIGNING_KEY!),
        /billing-ledger-migrate: gets INTERNAL_SIGNING_KEY; it needs the owner role's URL alone/,
      ],
      [
        "a database password postgres-init does not give",
        (c) => void (env(c, "postgres").MCP_APP_PASSWORD = "other"),
        /mcp: MCP_DATABASE_URL logs in with another password/,
      ],
      [
        "MinIO's root credentials for the files service",
        (c) => void (env(c, "files").OBJECT_STORE_ACCESS_KEY = "meter-root"),
        /files: uses MinIO's root credentials/,
      ],
      ["a dependency that does not exist", (c) => void (service(c, "gateway").depends_on = ["billing"]), /depends on billing, which is not a service/],
      [
        "a healthcheck on another port",
        (c) => void (service(c, "gateway").healthcheck = { test: ["CMD", "node", "-e", "fetch('http://127.0.0.1:8081/readyz')"] }),
        /gateway: healthcheck asks :8081/,
      ],
      ["a second public port", (c) => void (service(c, "text").ports = ["8081:8081"]), /text: publishes a port/],
      [
        "a worker on the broker's administrator",
        (c) => void (env(c, "files-worker").RABBITMQ_URL = "amqp://meter:${RABBITMQ_PASSWORD:?x}@rabbitmq:5672"),
        /files-worker: RABBITMQ_URL logs in as the broker's administrator/,
      ],
      [
        "a worker on billing's broker user",
        (c) => void (env(c, "files-worker").RABBITMQ_URL = env(c, "billing-ledger").RABBITMQ_URL!),
        /files-worker: RABBITMQ_URL logs in as meter-billing-ledger, not its own meter-files-worker/,
      ],
      [
        "a broker password the broker does not give",
        (c) => void (env(c, "rabbitmq").TEXT_BROKER_PASSWORD = "other"),
        /text: RABBITMQ_URL logs in with another password than the broker gives meter-text/,
      ],
    ];
    it.each(cases)("%s", async (_name, breakIt, expected) => {
      const copy = JSON.parse(JSON.stringify(compose)) as ComposeFile;
      breakIt(copy);
      expect((await checkCompose(copy, variables)).join("\n")).toMatch(expected);
    });
  });
});
