import type { RequestHandler, Router } from "express";
import type { CabinetAsset, CabinetBundle } from "@meter/cabinet-web";
import { CabinetPageOperations } from "@meter/contracts";
import { AppError, operationRouter } from "@meter/service-kit";

/**
 * The page's own rules for the browser: scripts, styles and calls from this origin only (no CDN, no
 * inline script), never framed, no Referer leaving it. Chart.js styles its canvas through the DOM,
 * which a style-src policy does not touch.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

export const securityHeaders: RequestHandler = (_req, res, next) => {
  res.setHeader("content-security-policy", CONTENT_SECURITY_POLICY);
  res.setHeader("x-frame-options", "DENY");
  res.setHeader("x-content-type-options", "nosniff");
  res.setHeader("referrer-policy", "no-referrer");
  next();
};

/**
 * The precompressed copy the browser accepts, brotli first (smaller); none when it accepts neither or
 * refuses both with `q=0`.
 */
export function chooseEncoding(acceptEncoding: string | undefined, asset: CabinetAsset): "br" | "gzip" | undefined {
  const accepted = new Map<string, number>();
  for (const part of (acceptEncoding ?? "").split(",")) {
    const [name, ...params] = part.trim().toLowerCase().split(";");
    if (!name) continue;
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    accepted.set(name, q === undefined ? 1 : Number(q));
  }
  const allows = (name: string) => (accepted.get(name) ?? accepted.get("*") ?? 0) > 0;
  if (asset.encoded.br && allows("br")) return "br";
  if (asset.encoded.gzip && allows("gzip")) return "gzip";
  return undefined;
}

/**
 * The bundle's files under /cabinet/assets, cached for a year (their names change with their content),
 * and the one HTML page at every other /cabinet address, fetched anew each time (it names the files).
 */
export function staticPagesRoutes(bundle: CabinetBundle): Router {
  const page: RequestHandler = (req, res) => {
    res.setHeader("content-type", "text/html; charset=utf-8");
    res.setHeader("cache-control", "no-cache");
    res.end(req.method === "HEAD" ? undefined : bundle.html);
  };
  return operationRouter(CabinetPageOperations, "/cabinet", {
    asset: (req, res) => {
      const name = String(req.params.name);
      const asset = bundle.assets.get(name);
      if (!asset) throw new AppError("not_found", `no cabinet asset ${name}`);
      const encoding = chooseEncoding(req.headers["accept-encoding"], asset);
      const body = encoding ? asset.encoded[encoding]! : asset.body;
      res.setHeader("content-type", asset.contentType);
      res.setHeader("cache-control", "public, max-age=31536000, immutable");
      res.setHeader("vary", "accept-encoding");
      if (encoding) res.setHeader("content-encoding", encoding);
      res.setHeader("content-length", String(body.length));
      res.end(req.method === "HEAD" ? undefined : body);
    },
    home: page,
    page,
  });
}
