import net from "node:net";
import type { ReadinessCheck } from "@meter/service-kit";

export interface ClamdAddress {
  host: string;
  port: number;
  timeoutMs: number;
}

/** What clamd scans with, from its VERSION answer. */
export type ClamdSignatures = { official: true; engine: string; daily: string; builtAt: string } | { official: false; engine: string };

/**
 * clamd answers VERSION with `ClamAV 1.4.6/27455/Sat Nov 14 07:39:00 2026` (engine, daily database
 * version, its build time) when it has ClamAV's official databases loaded, and with `ClamAV 1.4.6`
 * alone when it has only unofficial ones: here, the project's test signatures (infra/clamav).
 */
export function parseClamdVersion(answer: string): ClamdSignatures {
  const [engine, daily, builtAt] = answer.trim().split("/");
  if (!engine?.startsWith("ClamAV ")) throw new Error(`clamd answered VERSION with "${answer.slice(0, 80)}"`);
  return daily && builtAt ? { official: true, engine, daily, builtAt } : { official: false, engine };
}

/** One clamd command in its NUL-terminated form, and the answer without its NUL. */
function ask(address: ClamdAddress, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection({ host: address.host, port: address.port });
    let answer = "";
    socket.setTimeout(address.timeoutMs, () => socket.destroy(new Error(`no answer within ${address.timeoutMs} ms`)));
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.write(`z${command}\0`));
    socket.on("data", (chunk: string) => {
      answer += chunk;
      if (answer.includes("\0")) socket.end();
    });
    socket.on("close", () => resolve(answer.replace(/\0.*$/s, "")));
    socket.on("error", reject);
  });
}

/**
 * The scanner as the health report shows it (`scanner` in /readyz), never counted in readiness: while
 * clamd is away or not ready (in production, without current official signatures its own readiness
 * fails) uploads wait `verifying`, which is no fault of this process. Locally it says that clamd has
 * only the test signatures, which detect the EICAR test string and nothing else.
 */
export function scannerReadiness(address: ClamdAddress): ReadinessCheck {
  return {
    name: "scanner",
    advisory: true,
    check: async () => {
      let signatures: ClamdSignatures;
      try {
        signatures = parseClamdVersion(await ask(address, "VERSION"));
      } catch (err) {
        throw new Error(`not ready to verify: clamd at ${address.host}:${address.port}: ${messageOf(err)}`, { cause: err });
      }
      return signatures.official
        ? `${signatures.engine}, daily database ${signatures.daily} of ${signatures.builtAt}`
        : `test signatures only (${signatures.engine}, no official database): uploads are checked for the EICAR test string alone`;
    },
  };
}

/** An error's message; a socket's errors may come from another realm than this module's Error. */
function messageOf(err: unknown): string {
  const message = (err as { message?: unknown } | undefined)?.message;
  return typeof message === "string" && message !== "" ? message : String(err);
}
