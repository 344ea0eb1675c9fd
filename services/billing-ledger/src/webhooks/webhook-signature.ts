import { createHmac, randomBytes } from "node:crypto";

const SECRET_PREFIX = "whsec_";

/** A new endpoint secret: `whsec_` + base64 of 24 random bytes (Standard Webhooks' format). */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString("base64");
}

/**
 * The `webhook-signature` header of one attempt, per the Standard Webhooks spec: `v1,` + base64 of
 * HMAC-SHA256 over `id.timestamp.body`, keyed by the secret's bytes (the base64 after `whsec_`).
 */
export function signWebhook(secret: string, id: string, timestampS: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), "base64");
  return "v1," + createHmac("sha256", key).update(`${id}.${timestampS}.${body}`).digest("base64");
}
