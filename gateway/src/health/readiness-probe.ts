import type { ServiceHealth } from "@meter/contracts";
import { describeFailure, redactCredentials, withoutCredentials } from "./redaction";

/**
 * Asks one service's `/readyz` (every service but the gateway answers it on its own port), for at
 * most timeoutMs. Never rejects: what went wrong is the entry's error.
 */
export async function probeReadiness(service: ServiceHealth["service"], url: string, timeoutMs: number): Promise<ServiceHealth> {
  const started = performance.now();
  const entry = { service, url: withoutCredentials(url) };
  try {
    const res = await fetch(`${url.replace(/\/+$/, "")}/readyz`, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(timeoutMs) });
    const body = (await res.json().catch(() => ({}))) as { status?: unknown; checks?: unknown };
    const ms = Math.round(performance.now() - started);
    const checks = checksOf(body.checks);
    if (res.status === 200) return { ...entry, ready: true, ms, checks, error: null };
    const failed = Object.entries(checks).filter(([, v]) => v !== "ok");
    const why = failed.length > 0 ? failed.map(([k, v]) => `${k}: ${v}`).join(", ") : typeof body.status === "string" ? body.status : "not ready";
    return { ...entry, ready: false, ms, checks, error: `answered ${res.status} (${why})` };
  } catch (err) {
    return { ...entry, ready: false, ms: null, checks: {}, error: describeFailure(err, timeoutMs) };
  }
}

/** The checks' outcomes as strings (masked like any error text); anything else a service might answer is left out. */
function checksOf(value: unknown): Record<string, string> {
  if (typeof value !== "object" || value === null) return {};
  return Object.fromEntries(
    Object.entries(value)
      .filter((e): e is [string, string] => typeof e[1] === "string")
      .map(([k, v]) => [k, redactCredentials(v)]),
  );
}
