import { isIP } from "node:net";
import { z } from "zod";

/**
 * How a secret setting is judged in production:
 * - `token`: a value we generate (ADMIN_TOKEN, FILES_UPLOAD_SECRET): at least 32 characters, all of the
 *   base64/base64url/hex alphabet (`openssl rand -hex 32` gives 64), at least 10 of them different.
 * - `password`: a credential another system checks (an object store secret key): at least 16 characters.
 * - `url`: a URL whose password, if it has one, is a `password`.
 * A password of a dependency on this host (127.0.0.0/8, ::1, localhost) is the host's own business and
 * is not measured. Whatever the kind, a value holding a placeholder (`change-me`) is refused.
 */
export type SecretKind = "token" | "password" | "url";
export interface SecretMeta {
  kind: SecretKind;
  /** For a `password`: the setting naming where it is used, so a loopback dependency's is not measured. */
  endpointKey?: string;
}

/** The settings that are secrets, marked where their schemas are made (env.token, env.secretUrl, ...). */
export const secretSettings = z.registry<SecretMeta>();

export const TOKEN_MIN_LENGTH = 32;
export const PASSWORD_MIN_LENGTH = 16;
const TOKEN_ALPHABET = /^[A-Za-z0-9+/=_-]+$/;
const TOKEN_MIN_DISTINCT = 10;
const PLACEHOLDER = /change-?me/i;

/** What is wrong with a value of a production setting, or undefined. */
export function secretProblem(value: string, meta: SecretMeta | undefined, endpoint?: string): string | undefined {
  if (PLACEHOLDER.test(value)) return "holds a placeholder (change-me): replace it with a generated secret";
  if (meta === undefined) return undefined;
  if (meta.kind === "token") return tokenProblem(value);
  if (meta.kind === "password") return endpoint !== undefined && isLoopback(hostOf(endpoint)) ? undefined : passwordProblem(value);
  return urlPasswordProblem(value);
}

function tokenProblem(value: string): string | undefined {
  if (value.length < TOKEN_MIN_LENGTH || !TOKEN_ALPHABET.test(value) || new Set(value).size < TOKEN_MIN_DISTINCT) {
    return `too weak for production: at least ${TOKEN_MIN_LENGTH} random characters of the base64 or hex alphabet (openssl rand -hex 32)`;
  }
  return undefined;
}

function passwordProblem(password: string): string | undefined {
  if (password.length < PASSWORD_MIN_LENGTH)
    return `password too weak for production: at least ${PASSWORD_MIN_LENGTH} random characters (openssl rand -hex 24)`;
  return undefined;
}

function urlPasswordProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.password === "" || isLoopback(url.hostname)) return undefined;
  return passwordProblem(decodeURIComponent(url.password));
}

function hostOf(endpoint: string): string {
  try {
    return new URL(endpoint).hostname;
  } catch {
    return endpoint;
  }
}

function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost" || h === "::1") return true;
  return isIP(h) === 4 && h.startsWith("127.");
}

/**
 * Every problem with the secrets of a production configuration: any setting of the schema holding a
 * placeholder, and every marked secret too weak. `raw` is the environment as given; `parsed` its
 * parsed values, so a secret left to its local default (guest:guest) is judged too.
 */
export function productionSecretProblems(shape: Record<string, z.ZodType>, raw: NodeJS.ProcessEnv, parsed: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const [key, schema] of Object.entries(shape)) {
    const meta = secretSettings.get(schema);
    const given = raw[key];
    const value = meta !== undefined && typeof parsed[key] === "string" ? parsed[key] : given;
    if (typeof value !== "string" || value === "") continue;
    const endpointValue = meta?.endpointKey === undefined ? undefined : parsed[meta.endpointKey];
    const problem = secretProblem(value, meta, typeof endpointValue === "string" ? endpointValue : undefined);
    if (problem !== undefined) problems.push(`${key}: ${problem}`);
  }
  return problems;
}
