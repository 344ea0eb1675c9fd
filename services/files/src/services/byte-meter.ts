import { createHash } from "node:crypto";

/** Counts and hashes bytes on their way through, so content is measured in the same pass that moves it. */
export class ByteMeter {
  private readonly hash = createHash("sha256");
  private count = 0;

  /**
   * Passes `source` through. With a cap, throws `cap.overflow()` the moment more than `cap.limit` bytes
   * have arrived, so a body longer than promised is refused without reading the rest.
   */
  async *measure(source: AsyncIterable<Buffer>, cap?: { limit: number; overflow: () => Error }): AsyncGenerator<Buffer> {
    for await (const chunk of source) {
      this.count += chunk.length;
      if (cap && this.count > cap.limit) throw cap.overflow();
      this.hash.update(chunk);
      yield chunk;
    }
  }

  get bytes(): number {
    return this.count;
  }

  /** Hex SHA-256 of everything measured; call once, at the end. */
  digest(): string {
    return this.hash.digest("hex");
  }
}
