import { UpstreamError, type ChatProvider, type ChatRequest, type ChatResult } from "@meter/upstreams";
import { localAnswer, localSleepMs } from "./local-model";

/**
 * The local model as a provider. A requested sleep behaves like a slow upstream: past `timeoutMs`, or
 * when the signal aborts, the call ends `unknown`, the outcome a remote upstream would leave, so demos
 * and tests of the caller see the same paths as in production.
 */
export function createLocalProvider(): ChatProvider {
  return {
    async complete(request: ChatRequest, options: { signal?: AbortSignal; timeoutMs: number }): Promise<ChatResult> {
      const sleepMs = localSleepMs(request);
      if (options.signal?.aborted) throw new UpstreamError("not_sent", "local: the call was aborted before it started");
      if (sleepMs > 0) await pause(sleepMs, options.timeoutMs, options.signal);
      return localAnswer(request);
    },
  };
}

function pause(ms: number, timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: UpstreamError) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      if (error) reject(error);
      else resolve();
    };
    const onAbort = () => done(new UpstreamError("unknown", "local: the call was aborted while the model was sleeping"));
    const timer =
      ms > timeoutMs
        ? setTimeout(() => done(new UpstreamError("unknown", `local: no answer within ${timeoutMs} ms (asked to sleep ${ms} ms)`)), timeoutMs)
        : setTimeout(() => done(), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
