import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { AddressNotAllowedError, pinnedLookup } from "./pinned-lookup";
import { isPublicAddress } from "./public-address";
import { hostOf } from "./webhook-url";

/** The most of a receiver's answer read (and kept for the log): its status is what counts. */
const MAX_RESPONSE_BYTES = 4096;

export interface SendResult {
  /** The receiver's status; undefined when no answer came. */
  status?: number;
  /** Why the attempt failed (no answer, a non-2xx status, a redirect), for the delivery log. */
  error?: string;
  ok: boolean;
  durationMs: number;
}

export interface WebhookSender {
  send(url: string, headers: Record<string, string>, body: string): Promise<SendResult>;
}

/**
 * Posts one webhook attempt: a fresh connection to an address checked after DNS (and pinned: the
 * socket connects to what was checked), a short deadline for the whole exchange, at most a few KiB of
 * the answer read, redirects never followed (a 3xx is a failed attempt).
 */
export function createWebhookSender(opts: { timeoutMs: number; allowPrivate: boolean }): WebhookSender {
  const lookup = pinnedLookup(opts.allowPrivate);
  return {
    send(rawUrl, headers, body) {
      const started = performance.now();
      const done = (r: Omit<SendResult, "durationMs">): SendResult => ({ ...r, durationMs: Math.round(performance.now() - started) });
      let url: URL;
      try {
        url = new URL(rawUrl);
      } catch {
        return Promise.resolve(done({ ok: false, error: "the endpoint's URL is not valid" }));
      }
      const host = hostOf(url);
      // An IP literal is never looked up: check it here.
      if (isIP(host) && !opts.allowPrivate && !isPublicAddress(host)) {
        return Promise.resolve(done({ ok: false, error: new AddressNotAllowedError(host, host).message }));
      }
      const client = url.protocol === "https:" ? https : http;
      return new Promise<SendResult>((resolve) => {
        let settled = false;
        const finish = (r: Omit<SendResult, "durationMs">) => {
          if (settled) return;
          settled = true;
          clearTimeout(deadline);
          req.destroy();
          resolve(done(r));
        };
        const req = client.request(
          url,
          {
            method: "POST",
            agent: false,
            lookup,
            headers: { ...headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), "user-agent": "Meter-Webhooks/1" },
          },
          (res) => {
            const status = res.statusCode ?? 0;
            let read = 0;
            const end = () => {
              const ok = status >= 200 && status < 300;
              finish({
                ok,
                status,
                ...(ok ? {} : { error: status >= 300 && status < 400 ? `answered ${status}: redirects are not followed` : `answered ${status}` }),
              });
            };
            res.on("data", (chunk: Buffer) => {
              read += chunk.length;
              if (read >= MAX_RESPONSE_BYTES) end();
            });
            res.on("end", end);
            res.on("error", end);
          },
        );
        const deadline = setTimeout(() => finish({ ok: false, error: `no answer within ${opts.timeoutMs} ms` }), opts.timeoutMs);
        req.on("error", (err: Error & { code?: string }) =>
          finish({ ok: false, error: err instanceof AddressNotAllowedError ? err.message : `${err.code ?? "error"}: ${err.message}` }),
        );
        req.end(body);
      });
    },
  };
}
