import type { RequestHandler } from "express";
import type { KeyIdentity } from "@meter/contracts";
import type { InternalClient } from "@meter/service-kit";

/**
 * `GET /v1/models` answered by the gateway from a copy of billing-ledger's answer: the published
 * catalog is the same for every key, and asking billing for it on every call cost a hop, a signature
 * check and a query (docs/benchmarks.md, the c=1 waterfall). The copy is dropped on every
 * `billing.catalog.changed` (as text's and media-jobs' catalogs reload then) and lives at most
 * `maxAgeMs` besides, for a change this process did not hear (broker down). Whatever billing answers
 * other than 200 is not kept: that request is forwarded as before, so errors keep their one source.
 */
export class PublishedModels {
  private copy: { body: Buffer; at: number } | undefined;
  /** Bumped by every change: a load that began before one must not store what it read. */
  private generation = 0;
  private loading: { generation: number; answer: Promise<Buffer | undefined> } | undefined;

  constructor(
    private readonly billing: Pick<InternalClient, "call">,
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** `billing.catalog.changed`: the next request reads the catalog afresh. */
  changed(): void {
    this.generation++;
    this.copy = undefined;
    this.loading = undefined;
  }

  /** The answer's body, or undefined when billing did not answer 200 (the caller forwards then). */
  async body(identity: KeyIdentity): Promise<Buffer | undefined> {
    if (this.copy && this.now() - this.copy.at < this.maxAgeMs) return this.copy.body;
    if (this.loading?.generation === this.generation) return this.loading.answer;
    const generation = this.generation;
    const startedAt = this.now();
    const answer = this.load(identity).then((body) => {
      if (body && generation === this.generation) this.copy = { body, at: startedAt };
      return body;
    });
    const loading = { generation, answer };
    this.loading = loading;
    void answer.finally(() => {
      if (this.loading === loading) this.loading = undefined;
    });
    return answer;
  }

  private async load(identity: KeyIdentity): Promise<Buffer | undefined> {
    try {
      const res = await this.billing.call("GET", "/v1/models", undefined, { identity });
      return res.status === 200 ? Buffer.from(JSON.stringify(res.body)) : undefined;
    } catch {
      return undefined;
    }
  }

  /** The route's handler: the copy when there is one, else on to the proxy (`next`). */
  handler(): RequestHandler {
    return (req, res, next) => {
      // Only the bare list: any query is billing's to read.
      if (req.originalUrl !== "/v1/models") return next();
      this.body(res.locals.identity as KeyIdentity).then((body) => {
        if (!body) return next();
        res.status(200).setHeader("content-type", "application/json; charset=utf-8");
        res.end(body);
      }, next);
    };
  }
}
