import type { BrokerHealth } from "@meter/contracts";
import { readWatchedQueues } from "@meter/messaging";
import { describeFailure } from "./redaction";

/** The broker now: reachable or not, and the topology's queues with their counts. Never rejects. */
export async function probeBroker(url: string, timeoutMs: number): Promise<BrokerHealth> {
  const started = performance.now();
  try {
    const queues = await readWatchedQueues(url, timeoutMs);
    return { available: true, ms: Math.round(performance.now() - started), error: null, queues };
  } catch (err) {
    return { available: false, ms: null, error: describeFailure(err, timeoutMs), queues: [] };
  }
}
