import { Router } from "express";
import { isDraining } from "./draining";

export interface ReadinessCheck {
  name: string;
  /** Resolves when the dependency answers (with what to report instead of `ok`, if it says more); rejects with why not. */
  check: () => Promise<void | string>;
  /**
   * Reported in the body, never counted: a dependency the process waits out rather than fails without
   * (the files service's scanner: while clamd is away uploads stay `verifying`).
   */
  advisory?: boolean;
}

/** Ready when a query answers on the service's own database. */
export function databaseReady(pool: { query(sql: string): Promise<unknown> }): ReadinessCheck {
  return { name: "database", check: async () => void (await pool.query("SELECT 1")) };
}

/** What readiness asks of a bus (packages/messaging's Bus). */
interface BusState {
  isConnected(): boolean;
  waitingForTopology(): boolean;
}

/** Why a bus that waits for its topology is not connected, in its readiness. */
const WAITING_FOR_TOPOLOGY = "waiting for the bus topology: billing-ledger has not declared its exchanges on this broker yet";

/** Ready while the broker connection is up (the bus reconnects by itself). */
export function busReady(bus: BusState): ReadinessCheck {
  return {
    name: "rabbitmq",
    check: async () => {
      if (bus.waitingForTopology()) throw new Error(WAITING_FOR_TOPOLOGY);
      if (!bus.isConnected()) throw new Error("not connected");
    },
  };
}

/**
 * For a process that serves while the broker is away (its commands wait in its outbox): not ready only
 * while the bus topology is not declared yet, a new install whose billing-ledger never ran on the broker.
 */
export function busTopologyReady(bus: BusState): ReadinessCheck {
  return {
    name: "bus_topology",
    check: async () => {
      if (bus.waitingForTopology()) throw new Error(WAITING_FOR_TOPOLOGY);
    },
  };
}

/**
 * `/healthz`: the process is alive. `/readyz`: every dependency answers (each check named in the body,
 * advisory ones too), and the process is not shutting down: from SIGTERM on it answers 503 `draining`,
 * whatever the checks.
 */
export function healthRoutes(checks: ReadinessCheck[]): Router {
  const router = Router();
  router.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  router.get("/readyz", async (_req, res) => {
    if (isDraining()) {
      res.status(503).json({ status: "draining", checks: {} });
      return;
    }
    const results = await Promise.all(
      checks.map(async (c) => {
        try {
          const said = await withTimeout(c.check(), 2000);
          return { name: c.name, value: typeof said === "string" ? said : "ok", counts: true };
        } catch (e) {
          return { name: c.name, value: (e as Error).message || "failed", counts: c.advisory === true };
        }
      }),
    );
    const ready = results.every((r) => r.counts);
    res.status(ready ? 200 : 503).json({ status: ready ? "ok" : "unavailable", checks: Object.fromEntries(results.map((r) => [r.name, r.value])) });
  });
  return router;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
