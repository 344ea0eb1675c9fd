import { z } from "zod";

/**
 * Text that is stored or compared in PostgreSQL, which cannot hold a NUL character (U+0000) in text:
 * such a value is the client's bad input (400 `invalid_request`), never a database error (500).
 */
export function withoutNul<S extends z.ZodString>(s: S) {
  return s.refine((v) => !v.includes("\u0000"), "must not contain a NUL character (\\u0000)");
}

/** A key's name (docs/api.md, "Changing a key"): 1..200 characters, trimmed. */
export const KeyName = withoutNul(z.string().trim().min(1).max(200));

/** The latest time a date column takes: JavaScript writes a later one with a six-digit year PostgreSQL refuses. */
export const LATEST_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
