/**
 * `tsx infra/local/clamd.ts [port]`: a local clamd (installed with apt-get if missing) in the
 * foreground until Ctrl-C. Env: CLAMD_HOST, CLAMD_PORT.
 */
import { ensureClamd, runInForeground } from "../../packages/local-infra/src";

const port = Number(process.argv[2] ?? process.env.CLAMD_PORT ?? 3310);
const host = process.env.CLAMD_HOST ?? "127.0.0.1";

void runInForeground("clamd", () => ensureClamd({ host, port, log: (line) => console.error(`[clamd] ${line}`) }));
