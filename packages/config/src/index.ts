import { z } from "zod";

/**
 * Thrown when the environment does not satisfy a service's config schema.
 * The message names every bad key at once, so one restart fixes them all.
 */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join("\n  ")}`);
    this.name = "ConfigError";
  }
}

export function parseConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const key = issue.path.join(".") || "(root)";
    return `${key}: ${issue.message}`;
  });
  throw new ConfigError(problems);
}

/** Environment variables are strings; these helpers turn them into typed values. */
export const env = {
  string: (fallback?: string) => (fallback === undefined ? z.string().min(1) : z.string().min(1).default(fallback)),
  optionalString: () => z.string().min(1).optional(),
  int: (fallback?: number, opts: { min?: number; max?: number } = {}) => {
    let inner = z.coerce.number().int();
    if (opts.min !== undefined) inner = inner.min(opts.min);
    if (opts.max !== undefined) inner = inner.max(opts.max);
    return fallback === undefined ? inner : z.preprocess(emptyToUndefined, inner.default(fallback));
  },
  port: (fallback: number) => z.preprocess(emptyToUndefined, z.coerce.number().int().min(0).max(65535).default(fallback)),
  bool: (fallback: boolean) =>
    z.preprocess(
      emptyToUndefined,
      z
        .enum(["true", "false", "1", "0", "yes", "no"])
        .default(fallback ? "true" : "false")
        .transform((v) => v === "true" || v === "1" || v === "yes"),
    ),
  url: (fallback?: string) => (fallback === undefined ? z.url() : z.preprocess(emptyToUndefined, z.url().default(fallback))),
  optionalUrl: () => z.preprocess(emptyToUndefined, z.url().optional()),
  enumOf: <const T extends readonly [string, ...string[]]>(values: T, fallback: T[number]) =>
    z.preprocess(emptyToUndefined, z.enum(values).default(fallback as never)),
};

function emptyToUndefined(v: unknown): unknown {
  return v === "" ? undefined : v;
}

/** Settings every service shares. Each service extends this with its own keys. */
export const CommonConfig = z.object({
  NODE_ENV: env.enumOf(["development", "test", "production"] as const, "development"),
  LOG_LEVEL: env.enumOf(["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const, "info"),
  INTERNAL_SECRET: z.string().min(16, "must be at least 16 characters (shared HMAC key for internal identity)"),
  HOST: env.string("127.0.0.1"),
});
export type CommonConfig = z.infer<typeof CommonConfig>;
