import { BillingErrors } from "../errors";
import type { RequestLogPosition } from "./request-log.store";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/** `next_cursor`: the last entry's time and id, opaque to clients (base64url), so a store may change it. */
export function encodeCursor(p: { created_at: string; id: string }): string {
  return Buffer.from(`${p.created_at}|${p.id}`, "utf8").toString("base64url");
}

/** A cursor this service issued, or 400 `invalid_request` naming the parameter. */
export function decodeCursor(cursor: string): RequestLogPosition {
  const parts = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  const [at, id] = parts;
  if (parts.length !== 2 || !at || !id || !ISO.test(at) || !UUID.test(id) || Number.isNaN(Date.parse(at))) {
    throw BillingErrors.badRequestLogCursor();
  }
  return { createdAt: new Date(at), holdId: id };
}
