import { Router } from "express";

export interface ReadinessCheck {
  name: string;
  check: () => Promise<void>;
}

/** `/healthz`: the process is alive. `/readyz`: every dependency answers (each check named in the body). */
export function healthRoutes(checks: ReadinessCheck[]): Router {
  const router = Router();
  router.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  router.get("/readyz", async (_req, res) => {
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
