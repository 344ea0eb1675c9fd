import { readdirSync } from "node:fs";
import { readText, repoPath } from "./repo";

export const CLAMAV_DIR = "infra/clamav";

/** The directives of infra/clamav/clamd.conf (the clamd image's configuration). */
export function clamdConf(text = readText(`${CLAMAV_DIR}/clamd.conf`)): Map<string, string> {
  const directives = new Map<string, string>();
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const [name, ...value] = trimmed.split(/\s+/);
    directives.set(name!, value.join(" "));
  }
  return directives;
}

/** clamd sizes: `100M`, `512K`, or bytes. */
export function clamdBytes(value: string | undefined): number | undefined {
  const match = /^(\d+)([KkMm]?)$/.exec(value ?? "");
  if (!match) return undefined;
  const unit = { "": 1, k: 1024, m: 1024 * 1024 }[match[2]!.toLowerCase() as "" | "k" | "m"];
  return Number(match[1]) * unit;
}

/** The port the clamd image listens on. */
export function clamdPort(conf = clamdConf()): number | undefined {
  const port = Number(conf.get("TCPSocket"));
  return Number.isInteger(port) && port > 0 ? port : undefined;
}

/** clamd's database extensions, as packages/local-infra/src/clamd.ts copies them for the local clamd. */
const SIGNATURE_FILE = /\.(hdb|hsb|hdu|hsu|mdb|msb|mdu|msu|ndb|ndu|ldb|ldu|cdb|ftm|fp|sfp|ign|ign2|pdb|gdb|wdb|yar|yara|cbc)$/;

/** The project-owned signature files, by name: every one the local clamd loads. */
export function signatureFiles(): Record<string, string> {
  const names = readdirSync(repoPath(CLAMAV_DIR)).filter((name) => SIGNATURE_FILE.test(name));
  return Object.fromEntries(names.sort().map((name) => [name, readText(`${CLAMAV_DIR}/${name}`)]));
}
