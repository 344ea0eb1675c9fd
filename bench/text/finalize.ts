import { sleep, type FinalFigures } from "./figures";
import { gatewayBody, type Tracking } from "./load";
import type { Context } from "./stack";

/**
 * Brings every request of a metered run to a final answer: each 202, and each request the load
 * generator left without an answer when it stopped (or lost to an error), is sent again with its
 * Idempotency-Key and body until the answer is final. Then waits for billing to have applied every
 * settlement and release (no active hold) and for the text service to have no unfinished request.
 */
export async function finalize(ctx: Context, tracking: Tracking): Promise<FinalFigures> {
  const started = performance.now();
  const queue = [...tracking.pending, ...tracking.outstanding];
  const finalStatuses: Record<string, number> = {};
  let unresolved = 0;
  const worker = async () => {
    for (let item = queue.pop(); item; item = queue.pop()) {
      const [idem, key] = item;
      const deadline = Date.now() + 120_000;
      for (;;) {
        let status = 0;
        let wait = 500;
        try {
          const res = await fetch(`${ctx.sut.url}/v1/messages`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${key}`, "idempotency-key": idem },
            body: gatewayBody,
          });
          status = res.status;
          wait = Math.min(2000, Number(res.headers.get("retry-after") ?? 0.5) * 1000);
          await res.arrayBuffer();
        } catch {
          // not answered: try again
        }
        // 202: not final yet; 429/503 (and no answer): this attempt was not taken, the first may still be under way.
        if (![0, 202, 429, 503].includes(status)) {
          finalStatuses[status] = (finalStatuses[status] ?? 0) + 1;
          break;
        }
        if (Date.now() > deadline) {
          unresolved++;
          break;
        }
        await sleep(wait);
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  // Settlements reach billing through the outbox and RabbitMQ a moment after each answer.
  let activeHolds = -1;
  let unfinishedTextRequests = -1;
  const deadline = Date.now() + 120_000;
  for (;;) {
    const holds = await ctx.sut.admin<{ data: unknown[] }>("GET", "/admin/v1/holds?status=active&limit=500");
    activeHolds = holds.data.length;
    unfinishedTextRequests = Number((await ctx.textDb.query<{ n: string }>("SELECT count(*) AS n FROM text_requests WHERE state = 'reserving'")).rows[0]!.n);
    if ((activeHolds === 0 && unfinishedTextRequests === 0) || Date.now() > deadline) break;
    await sleep(200);
  }
  return {
    followedUp: tracking.pending.size + tracking.outstanding.size,
    pending202: tracking.pending.size,
    abandoned: tracking.outstanding.size,
    finalStatuses,
    unresolved,
    activeHolds,
    unfinishedTextRequests,
    drainS: (performance.now() - started) / 1000,
  };
}

/**
 * Every text request against its hold, across the two databases: a completed request's hold settled for
 * exactly its cost, a failed one's released, no hold left active, no hold resolved twice in the ledger.
 */
export async function crossCheck(ctx: Context): Promise<{ ok: boolean; completed: number; failed: number; problems: Record<string, number> }> {
  try {
    return await crossCheckOrThrow(ctx);
  } catch (e) {
    return { ok: false, completed: 0, failed: 0, problems: { [`cross-check could not run: ${(e as Error).message}`]: 1 } };
  }
}

async function crossCheckOrThrow(ctx: Context): Promise<{ ok: boolean; completed: number; failed: number; problems: Record<string, number> }> {
  const text = await ctx.textDb.query<{ hold_id: string; state: string; cost: string | null }>(
    "SELECT hold_id, state::text AS state, cost FROM text_requests WHERE state IN ('completed', 'failed')",
  );
  const holds = await ctx.billingDb.query<{ id: string; status: string; settled: string | null }>("SELECT id, status::text AS status, settled FROM holds");
  const byId = new Map(holds.rows.map((h) => [h.id, h]));
  const problems: Record<string, number> = {};
  const problem = (what: string) => (problems[what] = (problems[what] ?? 0) + 1);
  let completed = 0;
  let failed = 0;
  for (const r of text.rows) {
    const h = byId.get(r.hold_id);
    if (r.state === "completed") {
      completed++;
      if (!h) problem("completed request without a hold");
      else if (h.status !== "settled") problem(`completed request, hold ${h.status}`);
      else if (h.settled !== r.cost) problem("settled amount differs from the request's cost");
    } else {
      failed++;
      if (h && h.status !== "released") problem(`failed request, hold ${h.status}`);
    }
  }
  for (const h of holds.rows) if (h.status === "active") problem("hold still active");
  const twice = await ctx.billingDb.query<{ n: string }>(
    "SELECT count(*) AS n FROM (SELECT hold_id, kind FROM ledger_entries WHERE hold_id IS NOT NULL GROUP BY hold_id, kind HAVING count(*) > 1) d",
  );
  if (Number(twice.rows[0]!.n) > 0) problems["hold with the same ledger entry twice"] = Number(twice.rows[0]!.n);
  return { ok: Object.keys(problems).length === 0, completed, failed, problems };
}
