import { spawnSync } from "node:child_process";
import { connect } from "node:net";
import { sleep } from "./child-process";

/** Resolves true when something accepts TCP connections on host:port. */
export function tcpOpen(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

interface Prerequisite {
  name: string;
  host: string;
  port: number;
  /** Commands that start it on a Debian machine of this project's kind, tried in order. */
  start: string[][];
}

/**
 * PostgreSQL, RabbitMQ and Redis (the gateway's per-key limits; asked for by those that need it) run
 * on every machine of this kind; if one is down (a fresh container), try the Debian service scripts
 * once, then wait for its port. Fails naming what is missing.
 */
export async function ensurePrerequisites(opts: {
  postgres: { host: string; port: number };
  rabbitmq: { host: string; port: number };
  redis?: { host: string; port: number };
  log: (line: string) => void;
}): Promise<void> {
  const wanted: Prerequisite[] = [
    {
      name: "PostgreSQL",
      ...opts.postgres,
      start: [
        ["service", "postgresql", "start"],
        ["pg_ctlcluster", "15", "main", "start"],
      ],
    },
    { name: "RabbitMQ", ...opts.rabbitmq, start: [["service", "rabbitmq-server", "start"]] },
    ...(opts.redis ? [{ name: "Redis", ...opts.redis, start: [["service", "redis-server", "start"]] }] : []),
  ];
  for (const p of wanted) {
    if (await tcpOpen(p.host, p.port)) continue;
    const local = p.host === "127.0.0.1" || p.host === "localhost";
    if (local) {
      opts.log(`${p.name} is not answering on ${p.host}:${p.port}; trying to start it`);
      for (const cmd of p.start) {
        const r = spawnSync(cmd[0]!, cmd.slice(1), { stdio: "ignore" });
        if (r.status === 0) break;
      }
    }
    const deadline = Date.now() + 60_000;
    while (!(await tcpOpen(p.host, p.port))) {
      if (!local || Date.now() > deadline) {
        throw new Error(`${p.name} is not reachable on ${p.host}:${p.port}; start it and run again`);
      }
      await sleep(500);
    }
    opts.log(`${p.name} is up on ${p.host}:${p.port}`);
  }
}
