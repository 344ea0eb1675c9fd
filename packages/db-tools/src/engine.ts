import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { PrismaPg } from "@prisma/adapter-pg";
import type pg from "pg";
import {
  ColumnTypeEnum,
  bindMigrationAwareSqlAdapterFactory,
  type SqlDriverAdapter,
  type SqlMigrationAwareDriverAdapterFactory,
} from "@prisma/driver-adapter-utils";
import type { SchemaEngine } from "@prisma/schema-engine-wasm";
import { enginePoolConfig, redactUrl } from "./postgres";

export type { SchemaEngine };

/**
 * The slice of the WebAssembly JS API used here. The workspace compiles against ES2023 and Node 20
 * types, which do not declare the WebAssembly global.
 */
type WasmModule = object;
type WasmExports = Record<string, unknown>;
type WasmApi = {
  compile(bytes: Uint8Array): Promise<WasmModule>;
  instantiate(module: WasmModule, imports: Record<string, Record<string, unknown>>): Promise<{ exports: WasmExports }>;
  Module: {
    imports(module: WasmModule): { module: string; name: string }[];
    exports(module: WasmModule): { name: string }[];
  };
};
const Wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** What wasm-bindgen's glue exports that we use; the rest are the wasm module's imports. */
type Glue = {
  SchemaEngine: typeof SchemaEngine;
  version(): string;
  __wbg_set_wasm(exports: WasmExports): void;
} & Record<string, unknown>;

type EngineModule = Pick<Glue, "SchemaEngine" | "version">;

/** The import namespace wasm-bindgen gave the module: its glue file. */
const GLUE_NAMESPACE = "./schema_engine_bg.js";

let engineModule: Promise<EngineModule> | undefined;

/**
 * The Prisma schema engine compiled to WebAssembly, loaded once per process.
 *
 * The module is the one the pinned `prisma` CLI ships (build/schema_engine_bg.wasm), so it is the
 * CLI's own engine build. The CLI ships no JS glue for it; @prisma/schema-engine-wasm has none
 * published for that build either, so we take the glue of the build we pin there after checking
 * that every import the module needs and every export the glue calls exist (wasm-bindgen hashes
 * the import names from their signatures, so a matching set means a matching interface).
 *
 * Node 20 cannot `import` a .wasm file, and the glue is an ES module that jest's CommonJS runtime
 * cannot load. It is wasm-bindgen's plain "bundler" output (top-level `export function` /
 * `export class`, no imports), so it is evaluated as a function in the caller's realm: under jest
 * that keeps the glue's `instanceof Promise` checks true for the adapter's promises.
 */
export function loadSchemaEngine(): Promise<EngineModule> {
  engineModule ??= instantiateEngine();
  return engineModule;
}

async function instantiateEngine(): Promise<EngineModule> {
  const glueSource = readFileSync(require.resolve("@prisma/schema-engine-wasm/schema_engine_bg"), "utf8");
  const glue = evaluateGlue(glueSource);
  const wasmPath = path.join(path.dirname(require.resolve("prisma/package.json")), "build", "schema_engine_bg.wasm");
  const module = await Wasm.compile(await readFile(wasmPath));
  assertGlueFits(module, glue, glueSource);

  installPanicRegistry();
  const instance = await Wasm.instantiate(module, { [GLUE_NAMESPACE]: glue });
  glue.__wbg_set_wasm(instance.exports);
  (instance.exports.__wbindgen_start as () => void)();

  assertEngineVersion(glue.version());
  return glue;
}

function assertGlueFits(module: WasmModule, glue: Glue, glueSource: string): void {
  const missingImports = Wasm.Module.imports(module)
    .filter((entry) => typeof glue[entry.name] !== "function")
    .map((entry) => entry.name);
  const exported = new Set(Wasm.Module.exports(module).map((entry) => entry.name));
  const missingExports = [...new Set(Array.from(glueSource.matchAll(/\bwasm\.([\w$]+)/g), (match) => match[1] ?? ""))].filter((name) => !exported.has(name));
  if (missingImports.length > 0 || missingExports.length > 0) {
    throw new Error(
      "The @prisma/schema-engine-wasm glue does not fit prisma's build/schema_engine_bg.wasm " +
        `(imports missing from the glue: ${missingImports.join(", ") || "none"}; exports missing from the wasm: ${missingExports.join(", ") || "none"})`,
    );
  }
}

function evaluateGlue(source: string): Glue {
  const names: string[] = [];
  const body = source.replace(/^export (function|class) ([\w$]+)/gm, (_match, kind: string, name: string) => {
    names.push(name);
    return `${kind} ${name}`;
  });
  if (/^(export|import)\b/m.test(body)) {
    throw new Error("Unexpected @prisma/schema-engine-wasm glue format: it is no longer plain wasm-bindgen output");
  }
  // ES modules are strict; the glue must stay so when evaluated as a function body.
  const factory = new Function("setTimeout", `"use strict";\n${body}\nreturn { ${names.join(", ")} };`) as (setTimeout: typeof engineSetTimeout) => Glue;
  return factory(engineSetTimeout);
}

/**
 * The engine arms a 10 s timer for each command (a time-out guard it never cancels: the glue has
 * no clearTimeout). Left alone it keeps every CLI run alive 10 s after the work is done, so the
 * glue gets this setTimeout, and the timers still armed are cleared once no engine is in use.
 */
const engineTimers = new Set<ReturnType<typeof setTimeout>>();
let enginesInUse = 0;

function engineSetTimeout(callback: () => void, ms: number): ReturnType<typeof setTimeout> {
  const timer = setTimeout(() => {
    engineTimers.delete(timer);
    callback();
  }, ms);
  engineTimers.add(timer);
  return timer;
}

function clearEngineTimers(): void {
  for (const timer of engineTimers) clearTimeout(timer);
  engineTimers.clear();
}

/** A Rust panic in the engine reports its message here before the call fails. */
type PanicRegistry = { message: string | undefined; set_message(message: string): void };

function installPanicRegistry(): void {
  const holder = globalThis as { PRISMA_WASM_PANIC_REGISTRY?: PanicRegistry };
  holder.PRISMA_WASM_PANIC_REGISTRY ??= {
    message: undefined,
    set_message(message: string) {
      this.message = message;
    },
  };
}

/** Takes the panic message, if any, so that a later failure does not report it again. */
function takePanic(): string | undefined {
  const registry = (globalThis as { PRISMA_WASM_PANIC_REGISTRY?: PanicRegistry }).PRISMA_WASM_PANIC_REGISTRY;
  const message = registry?.message;
  if (registry) registry.message = undefined;
  return message;
}

/**
 * The wasm engine is internal and unstable, and we run it with borrowed glue. So its own version()
 * must be the engine build the pinned `prisma` CLI was made with (@prisma/engines-version, a
 * dependency of its @prisma/engines): migration files and `_prisma_migrations` rows must be what
 * `prisma migrate deploy` itself would produce.
 */
export function expectedEngineVersion(): string {
  const prismaDir = path.dirname(require.resolve("prisma/package.json"));
  const enginesDir = path.dirname(require.resolve("@prisma/engines/package.json", { paths: [prismaDir] }));
  const manifest = readFileSync(require.resolve("@prisma/engines-version/package.json", { paths: [enginesDir] }), "utf8");
  return (JSON.parse(manifest) as { prisma: { enginesVersion: string } }).prisma.enginesVersion;
}

function assertEngineVersion(actual: string): void {
  const expected = expectedEngineVersion();
  if (actual !== expected) {
    throw new Error(
      `prisma's schema_engine_bg.wasm reports engine ${actual}, but its @prisma/engines-version says ${expected}. ` +
        "Is prisma installed at the version pinned in packages/db-tools/package.json?",
    );
  }
}

/**
 * Connections for the engine: @prisma/adapter-pg over pools with the `"char"` fix. It keeps every
 * adapter it hands out so they can be closed: freeing the engine does not dispose them.
 */
class EngineAdapterFactory implements SqlMigrationAwareDriverAdapterFactory {
  readonly provider = "postgres";
  readonly adapterName = "@prisma/adapter-pg";
  private readonly adapters: SqlDriverAdapter[] = [];

  constructor(private readonly url: string) {}

  async connect(): Promise<SqlDriverAdapter> {
    const adapter = await new PrismaPg(enginePoolConfig(this.url)).connect();
    sendScriptsWhole(adapter);
    reportCharColumnsAsCharacter(adapter);
    this.adapters.push(adapter);
    return adapter;
  }

  connectToShadowDb(): Promise<SqlDriverAdapter> {
    // We make and drop shadow databases ourselves (shadow-database.ts), so no command we send
    // should need one from the engine; fail loudly rather than fall back to the main database.
    return Promise.reject(new Error("db-tools does not let the schema engine create shadow databases"));
  }

  async close(): Promise<void> {
    await Promise.all(this.adapters.splice(0).map((adapter) => adapter.dispose()));
  }
}

/**
 * adapter-pg 7.10 runs a migration script by splitting it on every ";", which tears apart any function
 * body (plpgsql `$$ ... $$`). The native CLI sends the script as one simple query, which PostgreSQL
 * runs whole and atomically; do the same, keeping the adapter's own error conversion.
 */
function sendScriptsWhole(adapter: SqlDriverAdapter): void {
  const pgAdapter = adapter as SqlDriverAdapter & { underlyingDriver(): pg.Pool; onError(error: unknown): never };
  pgAdapter.executeScript = async (script: string) => {
    try {
      await pgAdapter.underlyingDriver().query(script);
    } catch (error) {
      pgAdapter.onError(error);
    }
  };
}

/** PostgreSQL's internal one-byte `"char"` type. */
const CHAR_OID = 18;
const TEXT_OID = 25;

type PgQueryable = {
  queryRaw(query: unknown): Promise<{ columnTypes: number[] }>;
  performIO(query: unknown): Promise<{ fields: { dataTypeID: number }[] }>;
};

/**
 * The engine reads pg_catalog columns of type `"char"` (relkind, contype, ...) while describing a
 * database and expects them as characters, but adapter-pg 7.10.1 refuses OID 18 outright
 * (UnsupportedNativeDataType). Per call, such columns are read as text and then reported to the engine
 * as `Character`, which is what the native driver gives it; the value is a one-character string either way.
 */
function reportCharColumnsAsCharacter(adapter: SqlDriverAdapter): void {
  const target = adapter as unknown as PgQueryable;
  const queryRaw = target.queryRaw;
  const performIO = target.performIO;
  target.queryRaw = async (query: unknown) => {
    const charColumns: number[] = [];
    const view = Object.create(target, {
      performIO: {
        value: async (q: unknown) => {
          const io = await performIO.call(target, q);
          io.fields.forEach((field, i) => {
            if (field.dataTypeID === CHAR_OID) {
              charColumns.push(i);
              field.dataTypeID = TEXT_OID;
            }
          });
          return io;
        },
      },
    }) as PgQueryable;
    const result = await queryRaw.call(view, query);
    for (const i of charColumns) result.columnTypes[i] = ColumnTypeEnum.Character;
    return result;
  };
}

/** Runs `work` with a schema engine connected to `databaseUrl`, and always releases both. */
export async function withSchemaEngine<T>(databaseUrl: string, work: (engine: SchemaEngine) => Promise<T>): Promise<T> {
  const { SchemaEngine } = await loadSchemaEngine();
  const factory = new EngineAdapterFactory(databaseUrl);
  enginesInUse += 1;
  try {
    const engine = await SchemaEngine.new({ datamodels: undefined }, logEngineLine, bindMigrationAwareSqlAdapterFactory(factory));
    try {
      return await work(engine);
    } finally {
      freeQuietly(engine);
    }
  } catch (error) {
    throw engineError(error, databaseUrl);
  } finally {
    enginesInUse -= 1;
    if (enginesInUse === 0) clearEngineTimers();
    await factory.close();
  }
}

/** After a panic the engine's memory is still borrowed and free() throws; the panic is what to report. */
function freeQuietly(engine: SchemaEngine): void {
  try {
    engine.free();
  } catch {
    // The wasm instance is dropped in engineError; nothing else holds this engine.
  }
}

/**
 * The engine logs JSON lines. INFO ("Applying `<migration>`", with its whole script) is noise next
 * to what each command returns; warnings and errors go to stderr as the CLI would show them.
 */
function logEngineLine(line: string): void {
  try {
    const entry = JSON.parse(line) as { level?: string; fields?: { message?: string } };
    if (entry.level === "WARN" || entry.level === "ERROR") console.error(`schema engine ${entry.level}: ${entry.fields?.message ?? line}`);
  } catch {
    console.error(`schema engine: ${line}`);
  }
}

/** Names the database in the engine's message. After a panic the wasm instance is unusable: drop it. */
function engineError(error: unknown, databaseUrl: string): Error {
  const panic = takePanic();
  if (panic) engineModule = undefined;
  const detail = error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error);
  return new Error(`Schema engine failed on ${redactUrl(databaseUrl)}: ${detail}${panic ? `\nPanic: ${panic}` : ""}`, { cause: error });
}
