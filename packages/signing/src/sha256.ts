import { createHash } from "node:crypto";

/** The hex SHA-256 of a body: what internal calls and bus messages sign instead of the body itself. */
export function sha256Hex(body: string | Buffer): string {
  return createHash("sha256").update(body).digest("hex");
}
