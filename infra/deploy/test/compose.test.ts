import { checkCompose, exampleVariables } from "./support/compose-checks";
import { interpolate, loadCompose, rawEnvironment, type ComposeFile, type ComposeService } from "./support/compose-file";

/**
 * docker-compose.yml cannot be run on the development machines (no Docker engine), so it is checked
 * here against the code it deploys: each component's environment goes through that component's own
 * loadConfig, every address must reach a service of the file, and so on (support/compose-checks.ts).
 */
describe("docker-compose.yml", () => {
  const compose = loadCompose();
  const variables = exampleVariables(compose);

  it("would start every component with a configuration it accepts, in a working order", async () => {
    expect(await checkCompose(compose, variables)).toEqual([]);
  });

  it("has no default for the secrets: compose refuses to start without them", () => {
    for (const secret of ["INTERNAL_SECRET", "ADMIN_TOKEN"]) {
      const values = Object.values(compose.services).flatMap((service) => rawEnvironment(service)[secret] ?? []);
      expect(values.length).toBeGreaterThan(0);
      for (const value of values) {
        expect(value).toMatch(new RegExp(`^\\$\\{${secret}:\\?[^}]+\\}$`));
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
      ["a third-party image on latest", (c) => void (service(c, "postgres").image = "postgres:latest"), /postgres: postgres:latest is not pinned/],
      ["a required setting missing", (c) => delete env(c, "gateway").ADMIN_TOKEN, /gateway\/src\/main\.ts would not start: [\s\S]*ADMIN_TOKEN/],
      ["a URL naming no service", (c) => void (env(c, "text").BILLING_LEDGER_URL = "http://billing:8084"), /BILLING_LEDGER_URL names host "billing"/],
      ["a port nothing listens on", (c) => void (env(c, "files-worker").CLAMD_PORT = "3311"), /files-worker: CLAMD_HOST uses port 3311/],
      ["a worker without a healthcheck", (c) => delete service(c, "files-worker").healthcheck, /files-worker: no HTTP healthcheck/],
      ["a misspelt setting", (c) => void (env(c, "text").TEXT_SYNC_TIMOUT_MS = "1000"), /sets TEXT_SYNC_TIMOUT_MS/],
      ["a server left on 127.0.0.1", (c) => delete env(c, "billing-ledger").HOST, /HOST is 127\.0\.0\.1/],
      ["a database password the server was not started with", (c) => void (env(c, "postgres").POSTGRES_PASSWORD = "other"), /logs in with other credentials/],
      ["object store keys MinIO was not started with", (c) => void (env(c, "minio").MINIO_ROOT_PASSWORD = "other-password"), /are not minio's root credentials/],
      ["a bucket the files service does not use", (c) => void (env(c, "minio-bucket").FILES_BUCKET = "other"), /minio-bucket: creates bucket other/],
      ["migrations on another database", (c) => void (env(c, "migrate").FILES_DATABASE_URL = "postgresql://meter:x@postgres:5432/other"), /FILES_DATABASE_URL differs/],
      ["a dependency that does not exist", (c) => void (service(c, "gateway").depends_on = ["billing"]), /depends on billing, which is not a service/],
      ["waiting for the health of a service without healthcheck", (c) => delete service(c, "rabbitmq").healthcheck, /rabbitmq has no healthcheck/],
      ["a healthcheck on another port", (c) => void (service(c, "gateway").healthcheck = { test: ["CMD", "node", "-e", "fetch('http://127.0.0.1:8081/readyz')"] }), /gateway: healthcheck asks :8081/],
      ["an entry file that does not exist", (c) => void (service(c, "files-worker").command = ["node", "--import", "tsx", "services/files/src/workers.ts"]), /workers\.ts, which does not exist/],
      ["a component nobody runs", (c) => delete c.services["files-worker"], /no compose service runs services\/files\/src\/worker\.ts/],
      ["a second public port", (c) => void (service(c, "text").ports = ["8081:8081"]), /text: publishes a port/],
    ];
    it.each(cases)("%s", async (_name, breakIt, expected) => {
      const copy = JSON.parse(JSON.stringify(compose)) as ComposeFile;
      breakIt(copy);
      const problems = await checkCompose(copy, variables);
      expect(problems.join("\n")).toMatch(expected);
    });
  });
});
