import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

const STUB_SCRIPT = `#!/bin/sh
echo "The Rust schema engine is not installed here: use @meter/db-tools (pnpm db ...) for migrations." >&2
exit 1
`;

/**
 * An executable that stands in for Prisma's Rust schema engine. The CLI insists on the engine file
 * before any command, and downloads it from a host these machines cannot reach; `generate` never
 * runs it, so any executable will do. Written to a temp name and renamed so that concurrent runs
 * never see a half-written file.
 */
export async function schemaEngineStub(): Promise<string> {
  const dir = path.join(os.tmpdir(), "meter-db-tools");
  const stub = path.join(dir, "schema-engine-stub.sh");
  await mkdir(dir, { recursive: true });
  const partial = `${stub}.${randomBytes(4).toString("hex")}`;
  await writeFile(partial, STUB_SCRIPT, { mode: 0o755 });
  await rename(partial, stub);
  return stub;
}

/**
 * `prisma generate` for one service, with its own prisma.config.ts (run from the service folder).
 * Returns the CLI's output. The CLI is the one pinned by this package, whatever the service has.
 */
export async function generateClient(serviceDir: string): Promise<string> {
  const cli = path.join(path.dirname(require.resolve("prisma/package.json")), "build", "index.js");
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PRISMA_SCHEMA_ENGINE_BINARY: await schemaEngineStub(),
    // Both would otherwise call Prisma's servers and wait for a time-out.
    CHECKPOINT_DISABLE: "1",
    PRISMA_HIDE_UPDATE_MESSAGE: "1",
  };
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, "generate"], { cwd: serviceDir, env });
    return `${stdout}${stderr}`.trim();
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`prisma generate failed in ${serviceDir}:\n${failed.stdout ?? ""}${failed.stderr ?? failed.message}`, { cause: error });
  }
}

/**
 * `generateClient` unless the client in the schema's output folder was generated from this very
 * schema by this very Prisma: a start or a test run then skips ~2 s of CPU per service. The stamp
 * lives inside the output folder, so deleting the generated client also forces a new generation.
 */
export async function ensureClient(serviceDir: string): Promise<"generated" | "unchanged"> {
  const schemaPath = path.join(serviceDir, "prisma", "schema.prisma");
  const schema = await readFile(schemaPath, "utf8");
  const output = /^\s*output\s*=\s*"([^"]+)"/m.exec(schema)?.[1];
  if (output === undefined) {
    await generateClient(serviceDir);
    return "generated";
  }
  const stamp = path.join(path.dirname(schemaPath), output, ".generated-from");
  const prismaVersion = (JSON.parse(await readFile(require.resolve("prisma/package.json"), "utf8")) as { version: string }).version;
  const fingerprint = createHash("sha256").update(`${prismaVersion}\n${schema}`).digest("hex");
  if ((await readFile(stamp, "utf8").catch(() => "")) === fingerprint) return "unchanged";
  await generateClient(serviceDir);
  await writeFile(stamp, fingerprint);
  return "generated";
}
