import type { Request } from "express";

const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * The origin clients use, for the file links in tool results: PUBLIC_BASE_URL when set, else what the
 * gateway forwards (X-Forwarded-Proto/-Host, leftmost first: the edge closest to the client), else Host.
 * Only signed requests reach this service, so these headers come through the gateway. (The files
 * service builds its upload links the same way.)
 */
export function publicBaseUrl(req: Request, configured: string | undefined): string {
  if (configured) return configured.replace(/\/+$/, "");
  const proto = first(req.headers["x-forwarded-proto"]) ?? req.protocol;
  const host = first(req.headers["x-forwarded-host"]) ?? req.headers.host ?? "";
  return `${proto === "https" ? "https" : "http"}://${HOST.test(host) ? host : "localhost"}`;
}

function first(value: string | string[] | undefined): string | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  const head = raw?.split(",")[0]?.trim();
  return head ? head : undefined;
}
