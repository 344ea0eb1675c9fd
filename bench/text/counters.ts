import type { Context } from "./stack";

/** The metered system's counters (the services' /metrics, pg_stat_database), and their growth per request. */

/**
 * Counters of the metered system: each service's requests by route and its own *_total counters (from
 * its /metrics), and each database's commits and rows written (pg_stat_database).
 */
export async function counters(ctx: Context): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const service of ["text", "billing-ledger"] as const) {
    try {
      const body = await (await fetch(`${ctx.sut.system.urls[service]}/metrics`)).text();
      for (const line of body.split("\n")) {
        const m = /^(http_request_duration_seconds_count|http_request_duration_seconds_sum|[a-z_]+_total)\{([^}]*)\} ([0-9.e+-]+)$/.exec(line);
        if (!m) continue;
        const labels = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
        if (labels.route === "/metrics") continue;
        delete labels.service;
        if (m[1]!.startsWith("nodejs_") || m[1]!.startsWith("process_")) continue;
        const name = m[1]!.startsWith("http_request_duration_seconds")
          ? `${labels.method} ${labels.route} ${labels.status}${m[1]!.endsWith("_sum") ? " (s)" : ""}`
          : `${m[1]}${Object.keys(labels).length ? JSON.stringify(labels) : ""}`;
        out.set(`${service}: ${name}`, Number(m[3]));
      }
    } catch {
      // a service that is down has no counters
    }
  }
  const { rows } = await ctx.textDb.query<{ datname: string; xact_commit: string; tup_inserted: string; tup_updated: string; tup_deleted: string }>(
    "SELECT datname, xact_commit, tup_inserted, tup_updated, tup_deleted FROM pg_stat_database WHERE datname = ANY($1)",
    [ctx.dbNames],
  );
  for (const r of rows) {
    const db = r.datname === ctx.dbNames[0] ? "text db" : "billing db";
    out.set(`${db}: commits`, Number(r.xact_commit));
    out.set(`${db}: rows inserted`, Number(r.tup_inserted));
    out.set(`${db}: rows updated`, Number(r.tup_updated));
    out.set(`${db}: rows deleted`, Number(r.tup_deleted));
  }
  return out;
}

/** Each counter's growth per completed request; for a route's time (its "(s)" sum), the mean ms per call instead. */
export function perRequest(before: Map<string, number>, after: Map<string, number>, completed: number): Record<string, number> {
  const out: Record<string, number> = {};
  const delta = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
  for (const k of after.keys()) {
    const d = delta(k);
    if (d <= 0 || completed === 0) continue;
    if (k.endsWith(" (s)")) out[`${k.slice(0, -4)}: mean ms`] = (1000 * d) / Math.max(1, delta(k.slice(0, -4)));
    else out[k] = d / completed;
  }
  return out;
}
