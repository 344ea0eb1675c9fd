import { Router } from "express";
import { isDraining } from "./draining";

export interface ReadinessCheck {
  name: string;
  check: () => Promise<void>;
}

/** Ready when a query answers on the service's own database. */
export function databaseReady(pool: { query(sql: string): Promise<unknown> }): ReadinessCheck {
  return { name: "database", check: async () => void (await pool.query("SELECT 1")) };
}

/** Ready while the broker connection is up (the bus reconnects by itself). */
export function busReady(bus: { isConnected(): boolean }): ReadinessCheck {
  return {
    name: "rabbitmq",
    check: async () => {
      if (!bus.isConnected()) throw new Error("not connected");
    },
  };
}

/**
 * `/healthz`: the process is alive. `/readyz`: every dependency answers (each check named in the body),
 * and the process is not shutting down: from SIGTERM on it answers 503 `draining`, whatever the checks.
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
          await withTimeout(c.check(), 2000);
          return [c.name, "ok"] as const;
        } catch (e) {
          return [c.name, (e as Error).message || "failed"] as const;
        }
      }),
    );
    const ready = results.every(([, v]) => v === "ok");
    res.status(ready ? 200 : 503).json({ status: ready ? "ok" : "unavailable", checks: Object.fromEntries(results) });
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
