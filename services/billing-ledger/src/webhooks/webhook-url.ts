import { isIP } from "node:net";
import { MAX_WEBHOOK_URL_LENGTH } from "@meter/contracts";
import { WebhookErrors } from "../errors";
import { resolveAll } from "./pinned-lookup";
import { isPublicAddress } from "./public-address";

export interface OutboundPolicy {
  /** NODE_ENV=production: https only. */
  httpsOnly: boolean;
  /** WEBHOOK_ALLOW_PRIVATE_ADDRESSES. */
  allowPrivate: boolean;
}

/** A URL's host as an address would be written (an IPv6 literal without its brackets). */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, "$1");
}

/**
 * A webhook URL as registered: absolute http(s) (https only in production), no credentials or fragment,
 * and a host that resolves, now, to public addresses only (unless private ones are allowed). Every
 * connection checks the addresses again (pinned-lookup.ts): this check only refuses early.
 */
export async function checkWebhookUrl(raw: string, policy: OutboundPolicy): Promise<URL> {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) throw WebhookErrors.invalidUrl(`at most ${MAX_WEBHOOK_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw WebhookErrors.invalidUrl("not an absolute URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw WebhookErrors.invalidUrl(`scheme ${url.protocol.slice(0, -1)} is not allowed: use ${policy.httpsOnly ? "https" : "https or http"}`);
  }
  if (policy.httpsOnly && url.protocol !== "https:") throw WebhookErrors.invalidUrl("must be https");
  if (url.username || url.password) throw WebhookErrors.invalidUrl("must not carry a user name or password");
  if (url.hash) throw WebhookErrors.invalidUrl("must not have a fragment (#...)");
  const host = hostOf(url);
  if (!host) throw WebhookErrors.invalidUrl("has no host");
  let addresses: string[];
  if (isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = await resolveAll(host);
    } catch {
      throw WebhookErrors.invalidUrl(`${host} does not resolve`);
    }
    if (addresses.length === 0) throw WebhookErrors.invalidUrl(`${host} does not resolve`);
  }
  if (!policy.allowPrivate) {
    const refused = addresses.find((a) => !isPublicAddress(a));
    if (refused) throw WebhookErrors.addressNotAllowed(host, refused);
  }
  return url;
}
