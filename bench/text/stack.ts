import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { Client } from "pg";
import { repoRoot } from "@meter/local-infra";
import { startSystemUnderTest, type SystemUnderTest } from "@meter/testing";
import { snapshot } from "./cpu";
import { sleep } from "./figures";

/**
 * The processes under load: the fake upstream and the forwarder (helpers of ours), Portkey's gateway, and the real
 * billing-ledger, text and gateway with their databases, many organizations' keys and one hot one.
 */

/** A process of ours, started with node and tsx, printing one JSON line when ready. */
export async function startHelper(
  file: string,
  args: string[],
  nodeArgs: string[],
): Promise<{ child: ChildProcess; info: { url?: string; anthropicBaseUrl?: string; openaiBaseUrl?: string; pid: number } }> {
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", path.join(__dirname, file), ...args], {
    cwd: repoRoot(),
    stdio: ["ignore", "pipe", "inherit"],
  });
  const info = await new Promise<{ url?: string; anthropicBaseUrl?: string; openaiBaseUrl?: string; pid: number }>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`${file} exited (${code}) before it was ready`)));
    createInterface({ input: child.stdout! }).once("line", (line) => resolve(JSON.parse(line) as { pid: number }));
  });
  return { child, info };
}

export interface Context {
  sut: SystemUnderTest;
  upstreamPid: number;
  forwarderPid: number;
  /** Portkey's gateway, when the `portkey` target runs. */
  portkey: { pid: number; url: string } | undefined;
  portkeyPid: number | undefined;
  upstreamUrl: string;
  upstreamOpenaiUrl: string;
  forwarderUrl: string;
  dbNames: string[];
  textDb: Client;
  billingDb: Client;
  manyKeys: string[];
  hotKey: string;
  windows: { label: string; startUs: number; endUs: number }[];
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await Promise.race([exited, sleep(10_000)]);
}
export type Helper = Awaited<ReturnType<typeof startHelper>>;

/** What was started so far, so a start that fails half-way is still stopped. */
export interface Started {
  sut?: SystemUnderTest;
  clients: Client[];
}

/**
 * Starts billing-ledger, text and the gateway against the fake upstream, opens the two databases and
 * makes `orgCount` organizations (one key each) and one hot organization. With `profileDir` every
 * service runs with `nodeArgs` (--cpu-prof), and the pids of the profiled processes are written there.
 */
export async function startStack(
  started: Started,
  opts: {
    upstream: Helper;
    forwarder: Helper;
    portkey: { pid: number; url: string } | undefined;
    orgCount: number;
    nodeArgs: string[];
    profileDir: string | undefined;
    windows: Context["windows"];
  },
): Promise<Context> {
  const { upstream, forwarder, profileDir, nodeArgs } = opts;
  const sut = await startSystemUnderTest({
    only: ["billing-ledger", "text", "gateway"],
    upstream: { anthropicBaseUrl: upstream.info.anthropicBaseUrl! },
    // The services' own defaults, not the test stack's quick timers (catalog reload and reconciler every
    // 200 ms), which would charge every request here with background work a deployment does not do.
    env: { LOG_LEVEL: "warn", CATALOG_REFRESH_MS: "2000", RECONCILE_INTERVAL_MS: "1000", WORKER_STALE_MS: "15000" },
    ...(profileDir ? { nodeArgs } : {}),
    // On a machine shared with other work, a process may take longer than the default minute to start.
    readyTimeoutMs: 180_000,
  });
  started.sut = sut;
  const textUrl = sut.env.TEXT_DATABASE_URL!;
  const billingUrl = sut.env.BILLING_LEDGER_DATABASE_URL!;
  const textDb = new Client({ connectionString: textUrl });
  const billingDb = new Client({ connectionString: billingUrl });
  started.clients.push(textDb, billingDb);
  await Promise.all(started.clients.map((c) => c.connect()));

  // Many organizations (one key each), and one hot organization with one key.
  const accounts = [];
  for (let i = 0; i < opts.orgCount; i++) accounts.push(await sut.account({ credit: 1_000_000_000_000, dailyBudget: 1_000_000_000_000 }));
  const hot = await sut.account({ credit: 1_000_000_000_000, dailyBudget: 1_000_000_000_000 });
  const ctx: Context = {
    sut,
    upstreamPid: upstream.info.pid,
    forwarderPid: forwarder.info.pid,
    portkey: opts.portkey,
    portkeyPid: opts.portkey?.pid,
    upstreamUrl: upstream.info.anthropicBaseUrl!,
    upstreamOpenaiUrl: upstream.info.openaiBaseUrl!,
    forwarderUrl: forwarder.info.url!,
    dbNames: [textUrl, billingUrl].map((u) => new URL(u).pathname.slice(1)),
    textDb,
    billingDb,
    manyKeys: accounts.map((a) => a.key),
    hotKey: hot.key,
    windows: opts.windows,
  };
  if (profileDir) {
    const pids = Object.fromEntries(
      [...snapshot(ctx).groups].filter(([g]) => !["pg-all", "postgres", "rabbitmq", "redis"].includes(g)).map(([g, p]) => [g, p]),
    );
    writeFileSync(path.join(profileDir, "processes.json"), JSON.stringify(pids, null, 2));
  }
  return ctx;
}

export async function stopStack(started: Started): Promise<void> {
  await Promise.all(started.clients.map((c) => c.end().catch(() => undefined)));
  await started.sut?.close();
}
