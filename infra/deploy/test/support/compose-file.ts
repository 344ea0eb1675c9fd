import { isRecord, readYaml } from "./repo";

export interface ComposeHealthcheck {
  test?: string[] | string;
  disable?: boolean;
}

export interface ComposeService {
  image?: string;
  build?: string | { context?: string; dockerfile?: string; target?: string; args?: Record<string, string> };
  command?: string[] | string;
  entrypoint?: string[] | string;
  environment?: Record<string, string | number | boolean | null> | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: ComposeHealthcheck;
  ports?: (string | number | Record<string, unknown>)[];
  restart?: string;
  volumes?: (string | Record<string, unknown>)[];
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

/** docker-compose.yml as compose reads it (merge keys resolved), before interpolation. */
export function loadCompose(relative = "docker-compose.yml"): ComposeFile {
  const parsed = readYaml(relative);
  if (!isRecord(parsed) || !isRecord(parsed.services)) throw new Error(`${relative}: no services`);
  return parsed as unknown as ComposeFile;
}

// $$, ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error}, ${NAME:+alt}, $NAME
const VARIABLE = /\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g;

/** Compose's variable substitution of one value. A required variable that is unset throws, as compose refuses to start. */
export function interpolate(value: string, variables: Readonly<Record<string, string>>): string {
  const result = value.replace(
    VARIABLE,
    (_match, dollar: string | undefined, braced: string | undefined, op: string | undefined, arg: string | undefined, bare: string | undefined) => {
      if (dollar) return "$";
      const name = (braced ?? bare)!;
      const set = Object.hasOwn(variables, name);
      const current = variables[name];
      const nonEmpty = set && current !== "";
      switch (op) {
        case ":-":
          return nonEmpty ? current! : (arg ?? "");
        case "-":
          return set ? current! : (arg ?? "");
        case ":?":
        case "?":
          if (op === ":?" ? nonEmpty : set) return current!;
          throw new Error(`required variable ${name} is missing: ${arg ?? ""}`);
        case ":+":
        case "+":
          return (op === ":+" ? nonEmpty : set) ? (arg ?? "") : "";
        default:
          return current ?? "";
      }
    },
  );
  if (result.includes("${")) throw new Error(`a substitution compose would not understand in: ${value}`);
  return result;
}

/** The variables a value requires (`${NAME:?...}` / `${NAME?...}`). */
export function requiredVariables(value: string): string[] {
  return [...value.matchAll(VARIABLE)].filter((m) => m[3] === ":?" || m[3] === "?").map((m) => m[2]!);
}

/** Every string of a parsed document, deep. */
export function stringsOf(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  if (isRecord(value)) return Object.values(value).flatMap(stringsOf);
  return [];
}

/** The environment a service's container gets, uninterpolated: list or mapping form, `KEY:` (null) meaning unset. */
export function rawEnvironment(service: ComposeService): Record<string, string> {
  const env = service.environment;
  if (env === undefined) return {};
  if (Array.isArray(env)) {
    return Object.fromEntries(env.filter((line) => line.includes("=")).map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]));
  }
  return Object.fromEntries(Object.entries(env).flatMap(([key, value]) => (value === null ? [] : [[key, String(value)]])));
}

export function environmentOf(service: ComposeService, variables: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(rawEnvironment(service)).map(([key, value]) => [key, interpolate(value, variables)]));
}

export const asList = (value: string[] | string | undefined): string[] | undefined => (typeof value === "string" ? value.split(/\s+/).filter(Boolean) : value);

export function dependenciesOf(service: ComposeService): Record<string, string> {
  const deps = service.depends_on;
  if (deps === undefined) return {};
  if (Array.isArray(deps)) return Object.fromEntries(deps.map((name) => [name, "service_started"]));
  return Object.fromEntries(Object.entries(deps).map(([name, dep]) => [name, dep.condition ?? "service_started"]));
}
