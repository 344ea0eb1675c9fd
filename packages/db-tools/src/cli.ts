import path from "node:path";
import { backupDatabase, restoreDatabase } from "./backup";
import { generateClient } from "./generate";
import { checkDrift, createMigration, deployMigrations } from "./migrations";
import { ensureDatabase, redactUrl } from "./postgres";
import { describeDeployed } from "./service-migrations";
import { listServices, resolveService, serviceDatabaseEnvVar, serviceDatabaseUrl, WORKSPACE_ROOT } from "./services";

const USAGE = `pnpm db <command>

  generate [service...]   prisma generate for each service's client
  deploy [service...]     apply pending migrations, then changed prisma/sql files (database from
                          <SERVICE>_DATABASE_URL, else postgresql://postgres@127.0.0.1:5432/meter_<service>;
                          created if missing)
  new <service> <name>    write a migration from the existing migrations to schema.prisma
  check [service...]      replay the migrations into a shadow database and diff with schema.prisma;
                          exit 1 on drift
  backup <service> <file>   pg_dump (custom format) of the service's database into file
  restore <service> <file>  drop and recreate the service's database, then pg_restore file into it
                            (stop the service first; afterwards run npm run books:cross-check)

No service argument means every folder under services/ with a prisma/schema.prisma.`;

function services(args: string[]): string[] {
  const dirs = args.length > 0 ? args.map(resolveService) : listServices();
  if (dirs.length === 0) throw new Error("No service has a prisma/schema.prisma");
  return dirs;
}

const label = (serviceDir: string): string => path.relative(WORKSPACE_ROOT, serviceDir);

async function timed<T>(work: () => Promise<T>): Promise<[T, string]> {
  const started = performance.now();
  const result = await work();
  return [result, `${Math.round(performance.now() - started)} ms`];
}

async function generate(args: string[]): Promise<number> {
  for (const dir of services(args)) {
    const [, took] = await timed(() => generateClient(dir));
    console.log(`${label(dir)}: client generated (${took})`);
  }
  return 0;
}

async function deploy(args: string[]): Promise<number> {
  for (const dir of services(args)) {
    const url = serviceDatabaseUrl(dir);
    // Like `prisma migrate deploy`, which also creates a missing database.
    if (await ensureDatabase(url)) console.log(`${label(dir)}: created database ${redactUrl(url)}`);
    const [deployed, took] = await timed(() => deployMigrations({ serviceDir: dir, databaseUrl: url }));
    console.log(`${label(dir)}: ${describeDeployed(deployed)} on ${redactUrl(url)} (${serviceDatabaseEnvVar(dir)}; ${took})`);
  }
  return 0;
}

async function create(args: string[]): Promise<number> {
  const [service, name, ...rest] = args;
  if (!service || !name || rest.length > 0) {
    console.error("usage: pnpm db new <service> <name>");
    return 2;
  }
  const dir = resolveService(service);
  const created = await createMigration({ serviceDir: dir, name });
  if (!created) {
    console.log(`${label(dir)}: schema.prisma matches the migrations; no migration written`);
    return 0;
  }
  console.log(`${label(dir)}: wrote ${path.relative(WORKSPACE_ROOT, created.directory)}/migration.sql\n\n${created.sql}`);
  return 0;
}

async function check(args: string[]): Promise<number> {
  let drifted = 0;
  for (const dir of services(args)) {
    const sql = await checkDrift({ serviceDir: dir });
    if (sql === "") {
      console.log(`${label(dir)}: migrations match schema.prisma`);
    } else {
      drifted += 1;
      console.log(`${label(dir)}: schema.prisma differs from the migrations; \`pnpm db new ${path.basename(dir)} <name>\` would write:\n\n${sql}`);
    }
  }
  return drifted > 0 ? 1 : 0;
}

/** `backup` and `restore`: one service's database, for a drill or a recovery (docs/deploy.md). */
function oneDatabase(work: (url: string, file: string) => Promise<void>, done: string) {
  return async (args: string[]): Promise<number> => {
    const [service, file, ...rest] = args;
    if (!service || !file || rest.length > 0) {
      console.error("usage: pnpm db backup|restore <service> <file>");
      return 2;
    }
    const url = serviceDatabaseUrl(resolveService(service));
    await work(url, file);
    console.log(`${service}: ${done} ${redactUrl(url)} (${file})`);
    return 0;
  };
}

const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  generate,
  deploy,
  new: create,
  check,
  backup: oneDatabase(backupDatabase, "backed up"),
  restore: oneDatabase(restoreDatabase, "restored"),
};

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  const handler = command === undefined ? undefined : COMMANDS[command];
  if (!handler) {
    console.error(USAGE);
    return command === undefined || command === "help" || command === "--help" ? 0 : 2;
  }
  return handler(args);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  },
);
