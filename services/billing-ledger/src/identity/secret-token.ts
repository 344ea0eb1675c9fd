import { createHash, randomBytes } from "node:crypto";

/** 256 random bits behind a prefix that says what the secret is (session, invitation). */
export function newSecretToken(prefix: string): string {
  return prefix + randomBytes(32).toString("base64url");
}

/**
 * Only this digest is stored. A fast hash is enough: the token has 256 bits of entropy, so there is
 * nothing to slow a guesser down on, and every cabinet request looks its session up by it.
 */
export function secretTokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}
