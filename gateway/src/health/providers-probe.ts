import { AdminTextOperations, TextModelProviders, type ProvidersHealth } from "@meter/contracts";
import type { InternalAuth } from "@meter/service-kit";
import { z } from "zod";
import { describeFailure, withoutCredentials } from "./redaction";

const ProvidersAnswer = z.object({ data: z.array(TextModelProviders) });

/**
 * Text's upstream providers as `GET /admin/v1/text/providers` answers them, asked as the operator of
 * each text replica in turn until one answers (they read the same shared state). Never rejects.
 */
export async function readProviders(auth: InternalAuth, textUrls: readonly string[], timeoutMs: number): Promise<ProvidersHealth> {
  const path = AdminTextOperations.textProviders.path;
  const failures: string[] = [];
  for (const url of textUrls) {
    try {
      const headers = { ...auth.sign({ kind: "admin" }, { audience: "text", method: "GET", path, body: "" }), accept: "application/json" };
      const res = await fetch(`${url.replace(/\/+$/, "")}${path}`, { headers, signal: AbortSignal.timeout(timeoutMs) });
      if (!res.ok) {
        await res.body?.cancel();
        failures.push(`${withoutCredentials(url)} answered ${res.status}`);
        continue;
      }
      return { available: true, error: null, models: ProvidersAnswer.parse(await res.json()).data };
    } catch (err) {
      failures.push(`${withoutCredentials(url)}: ${err instanceof z.ZodError ? "an answer of another shape" : describeFailure(err, timeoutMs)}`);
    }
  }
  return { available: false, error: failures.join("; ") || "no text replica is configured", models: [] };
}
