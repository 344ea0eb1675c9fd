/**
 * Natural micro-batching: the first item runs at once; items that arrive while a batch is in flight
 * wait for it and then run together as the next batch. A lone request pays no added latency, and under
 * load many requests share one database round trip and one commit. A batch that throws is run again
 * item by item, so one item that cannot be processed fails alone, never its neighbours; unless
 * `splitFailedBatch` says the failure is not the items' doing (a remote call whose answer was lost:
 * running its items again would turn "outcome unknown" into whatever the second try saw).
 */
export class Batcher<I, O> {
  private queue: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private inFlight = 0;

  constructor(
    /** Runs one batch; returns one result per item, in order (an Error instance rejects that item only). */
    private readonly run: (items: I[]) => Promise<(O | Error)[]>,
    private readonly opts: { maxBatch?: number; concurrency?: number; splitFailedBatch?: (error: unknown) => boolean } = {},
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.drain();
    });
  }

  /** Items waiting or running; used to drain before shutdown. */
  get pending(): number {
    return this.queue.length + this.inFlight;
  }

  private drain(): void {
    const maxBatch = this.opts.maxBatch ?? 100;
    const concurrency = this.opts.concurrency ?? 1;
    while (this.inFlight < concurrency && this.queue.length > 0) {
      const batch = this.queue.splice(0, maxBatch);
      this.inFlight++;
      void this.execute(batch).finally(() => {
        this.inFlight--;
        this.drain();
      });
    }
  }

  private async execute(batch: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[]): Promise<void> {
    try {
      const results = await this.run(batch.map((b) => b.item));
      if (results.length !== batch.length) throw new Error(`batch returned ${results.length} results for ${batch.length} items`);
      batch.forEach((b, i) => {
        const r = results[i];
        if (r instanceof Error) b.reject(r);
        else b.resolve(r as O);
      });
    } catch (e) {
      if (batch.length === 1 || this.opts.splitFailedBatch?.(e) === false) {
        for (const b of batch) b.reject(e);
        return;
      }
      await Promise.all(batch.map((b) => this.execute([b])));
    }
  }
}
