import type { Logger } from "@meter/service-kit";
import { sniffMimeType, SNIFF_BYTES } from "../adapters/file-type-sniffer";
import type { MalwareScanner } from "../adapters/malware-scanner";
import type { ObjectStore } from "../adapters/object-store";
import type { Clock } from "../domain/policy";
import type { FileRepository, StoredFile, Verdict } from "../repositories/file.repository";
import { ByteMeter } from "./byte-meter";
import { discardObject } from "./discard-object";
import { dimensionsReaderFor, type ImageDimensions } from "./image-dimensions";

export type VerificationOutcome = "verified" | "rejected" | "skipped";

/** Content types that are a kind of the declared one: an animated PNG is a PNG to every PNG reader. */
const ALSO_ACCEPTED: Record<string, readonly string[]> = { "image/png": ["image/apng"] };

export interface VerificationServiceDeps {
  files: FileRepository;
  store: ObjectStore;
  scanner: MalwareScanner;
  clock: Clock;
  logger: Logger;
  /** Width x height an image's header may say; a larger image never reaches the scanner. */
  maxImagePixels: number;
}

/**
 * Decides a `verifying` file: object present, its size, its SHA-256, its magic bytes against the
 * declared type, an image's pixel count from its header, then clamd, cheapest first (a file already
 * wrong is not sent to the scanner, and an image too large to decode cheaply never is). Throws
 * when it cannot decide (object store or clamd unreachable): the file stays `verifying` and the
 * message is retried. Only a clean scan of the whole content verifies.
 */
export class VerificationService {
  constructor(private readonly deps: VerificationServiceDeps) {}

  async verify(fileId: string): Promise<VerificationOutcome> {
    const { files, clock, logger } = this.deps;
    const file = await files.find(fileId);
    // Redelivered after a verdict, or deleted/expired meanwhile: nothing left to decide.
    if (file?.status !== "verifying") return "skipped";
    const verdict = await this.check(file);
    if (!(await files.finishVerification(file.id, verdict, clock.now()))) return "skipped";
    if (verdict.status === "verified") return "verified";
    logger.info({ file_id: file.id, code: verdict.code, detail: verdict.detail }, "file rejected");
    await discardObject(this.deps, file);
    return "rejected";
  }

  private async check(file: StoredFile): Promise<Verdict> {
    const { store, scanner } = this.deps;
    const stat = await store.stat(file.objectKey);
    if (!stat) return reject("upload_missing", "no object was stored");
    if (stat.size !== file.sizeBytes) return reject("size_mismatch", `stored ${stat.size} bytes, declared ${file.sizeBytes}`);

    const { bytes, sha256, head, dimensions } = await this.measure(file.objectKey, file.mimeType);
    if (bytes !== file.sizeBytes) return reject("size_mismatch", `read ${bytes} bytes, declared ${file.sizeBytes}`);
    if (sha256 !== file.sha256) return reject("checksum_mismatch", `content hashes to ${sha256}`);
    const sniffed = await sniffMimeType(head);
    if (sniffed !== file.mimeType && !(sniffed && ALSO_ACCEPTED[file.mimeType]?.includes(sniffed))) {
      return reject("mime_mismatch", `content is ${sniffed ?? "of no recognised type"}`);
    }
    const pixels = dimensions ? dimensions.width * dimensions.height : 0;
    if (dimensions && pixels > this.deps.maxImagePixels) {
      return reject("image_too_large", `${dimensions.width}x${dimensions.height} is ${pixels} pixels, over ${this.deps.maxImagePixels}`);
    }

    const scan = await scanner.scan(await store.read(file.objectKey));
    if (!scan.clean) return reject("malware_detected", scan.signature);
    return { status: "verified" };
  }

  /** One pass over the object: its length, its SHA-256, the first bytes for sniffing and an image's dimensions. */
  private async measure(key: string, mimeType: string): Promise<{ bytes: number; sha256: string; head: Buffer; dimensions: ImageDimensions | undefined }> {
    const meter = new ByteMeter();
    const head: Buffer[] = [];
    let headBytes = 0;
    const dimensions = dimensionsReaderFor(mimeType);
    const content = await this.deps.store.read(key);
    for await (const chunk of meter.measure(content)) {
      dimensions?.write(chunk);
      if (headBytes < SNIFF_BYTES) {
        const part = chunk.subarray(0, SNIFF_BYTES - headBytes);
        head.push(Buffer.from(part));
        headBytes += part.length;
      }
    }
    return { bytes: meter.bytes, sha256: meter.digest(), head: Buffer.concat(head), dimensions: dimensions?.result };
  }
}

function reject(code: Extract<Verdict, { status: "rejected" }>["code"], detail: string): Verdict {
  return { status: "rejected", code, detail };
}
