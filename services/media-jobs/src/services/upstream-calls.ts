import { EngineAbortedError, UpstreamFailedError, type UpstreamRoute } from "@meter/media-engines";
import type { Logger } from "@meter/service-kit";
import { describeUpstreamFailure, UpstreamRouter, type RouterDeps } from "@meter/upstreams";
import type { JobRecord } from "../domain/job-record";
import type { JobRepository } from "../repositories/job.repository";

export interface UpstreamCallsDeps {
  repo: Pick<JobRepository, "route">;
  /** The longest one call may take; past it the call's outcome is unknown (`upstream_timeout`). */
  timeoutMs: number;
  /** Inline retries of a model's only provider answering 5xx/429 (nothing ran). */
  retryDelaysMs: readonly number[];
  logger: Logger;
  /** The providers' shared health and per-provider metrics. */
  routing?: Pick<RouterDeps, "health" | "metrics">;
}

/**
 * How a running job's upstream calls are made (docs/api.md, "Media on upstream models"): routed over its
 * model's providers as text's requests are (@meter/upstreams), each call's provider recorded on the job
 * before it is sent. A job run again after its worker died goes only to the provider its earlier run
 * recorded. A call no provider answers ends the job: `upstream_error` when nothing ran anywhere, and when
 * the connection was lost after sending (the upstream may have run it: never sent to another provider),
 * `upstream_timeout` when no answer came in time. Either way the job fails and nothing is charged.
 */
export class UpstreamCalls {
  private readonly router: UpstreamRouter;

  constructor(private readonly deps: UpstreamCallsDeps) {
    this.router = new UpstreamRouter({ retryDelaysMs: deps.retryDelaysMs, logger: deps.logger, ...(deps.routing ?? {}) });
  }

  /** The longest one routed call can take: every inline retry of a lone provider timing out, or each of several providers once. */
  worstCallMs(providers: number): number {
    const retries = providers > 1 ? providers - 1 : this.deps.retryDelaysMs.length;
    const waits = providers > 1 ? 0 : this.deps.retryDelaysMs.reduce((sum, ms) => sum + ms, 0);
    return this.deps.timeoutMs * (retries + 1) + waits;
  }

  /** The route of one run of a job on an upstream model (the job as this worker claimed it). */
  routeFor(job: JobRecord): UpstreamRoute {
    const providers = job.plan.upstream?.providers ?? [];
    return {
      call: async (send, usedTokens) => {
        const sent = await this.router.send({ providers, tokens: 0 }, job.provider, {
          timeoutMs: this.deps.timeoutMs,
          pin: (provider, refused) => this.deps.repo.route(job, provider, refused),
          call: send,
          ...(usedTokens ? { usedTokens } : {}),
        });
        switch (sent.kind) {
          case "answered":
            return sent.answer;
          case "moved":
            // The job is no longer this run's (taken over, cancelled): nothing was sent.
            throw new EngineAbortedError();
          case "unknown":
            this.deps.logger.warn({ job: job.id, provider: sent.provider, err: sent.error }, "upstream outcome unknown; the job fails uncharged");
            throw new UpstreamFailedError(
              sent.error.timedOut ? "upstream_timeout" : "upstream_error",
              `${describeUpstreamFailure(sent.error)}; the upstream may have run it`,
              true,
              { cause: sent.error },
            );
          case "failed":
            this.deps.logger.warn({ job: job.id, refused: sent.refused, err: sent.error }, "no upstream provider took the job's call");
            throw new UpstreamFailedError("upstream_error", describeUpstreamFailure(sent.error), false, { cause: sent.error });
        }
      },
    };
  }
}
