import { createHash } from "node:crypto";
import { AppError } from "./app-error";

/** Printable ASCII, as Stripe-style idempotency keys are. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The Idempotency-Key of a request that requires one, or the contract's 400. */
export function requireIdempotencyKey(header: string | undefined): string {
  if (header === undefined || header === "") {
    throw new AppError("idempotency_key_required", "this endpoint requires an Idempotency-Key header (one stable key per logical request)");
  }
  if (!IDEMPOTENCY_KEY.test(header)) throw new AppError("invalid_request", "Idempotency-Key must be 1 to 255 printable ASCII characters");
  return header;
}

/**
 * The id of the idempotency record for (key, endpoint, Idempotency-Key), the same in every process: a
 * UUID (version 8, RFC 9562's custom form) from a SHA-256 of the parts. The record's first hold takes
 * this id too, so the hold can be placed while the claim is still being written, and a duplicate of
 * the request places the very same hold (idempotent), never a second one. `kind` keeps the ids of
 * different services' records apart.
 */
export function idempotencyRecordId(kind: string, keyId: string, endpoint: string, idempotencyKey: string): string {
  const hash = createHash("sha256").update(`${kind}\n${keyId}\n${endpoint}\n${idempotencyKey}`).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x80;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** The body's identity for idempotency: canonical JSON (keys sorted), so formatting does not matter. */
export function fingerprintOf(body: unknown): string {
  return createHash("sha256").update(canonicalJson(body)).digest("hex");
}

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v && typeof v === "object") {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(",")}}`;
  }
  return JSON.stringify(v);
}
