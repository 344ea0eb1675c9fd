import type { Readable } from "node:stream";
import NodeClam from "clamscan";
import { ScannerUnavailableError, type MalwareScanner, type ScanVerdict } from "./malware-scanner";

export interface ClamavScannerOptions {
  host: string;
  port: number;
  /** Socket idle timeout: a clamd that stops answering mid-scan gives no verdict. */
  timeoutMs: number;
}

/**
 * clamd over TCP through `clamscan` (INSTREAM: clamscan has no buffer API, so content is a stream).
 * Only an explicit OK is clean. A refused or broken connection, a timeout, an error reply or an
 * unparseable one are ScannerUnavailableError: the file was not scanned, and the caller tries later.
 */
export class ClamavScanner implements MalwareScanner {
  private client: Promise<NodeClam> | undefined;

  constructor(private readonly opts: ClamavScannerOptions) {}

  async scan(content: Readable): Promise<ScanVerdict> {
    let result: { isInfected: boolean | null; viruses: string[] };
    try {
      result = await (await this.connect()).scanStream(content);
    } catch (error) {
      content.destroy();
      throw new ScannerUnavailableError(`clamd at ${this.opts.host}:${this.opts.port} gave no verdict: ${messageOf(error)}`, { cause: error });
    }
    if (result.isInfected === false) return { clean: true };
    if (result.isInfected === true) return { clean: false, signature: result.viruses.join(", ") || "unknown" };
    throw new ScannerUnavailableError(`clamd at ${this.opts.host}:${this.opts.port} answered without a verdict`);
  }

  /**
   * One configured client. `bypassTest` skips init's PING: whether clamd is up is asked on every scan
   * (a refused connection), not once at start, so a clamd that comes back later is simply used.
   */
  private connect(): Promise<NodeClam> {
    this.client ??= new NodeClam()
      .init({
        removeInfected: false,
        quarantineInfected: false,
        debugMode: false,
        preference: "clamdscan",
        clamscan: { active: false },
        clamdscan: {
          host: this.opts.host,
          port: this.opts.port,
          timeout: this.opts.timeoutMs,
          localFallback: false,
          bypassTest: true,
          active: true,
        },
      })
      .catch((error: unknown) => {
        this.client = undefined;
        throw error;
      });
    return this.client;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
