import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { healthRoutes, type ReadinessCheck } from "./health";

/** /readyz of a process with the given checks: its status and body. */
async function readyz(checks: ReadinessCheck[]): Promise<{ status: number; body: unknown }> {
  const app = express();
  app.use(healthRoutes(checks));
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`);
    return { status: res.status, body: (await res.json()) as unknown };
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

const database: ReadinessCheck = { name: "database", check: async () => undefined };
const down = (name: string, advisory?: true): ReadinessCheck => ({
  name,
  check: () => Promise.reject(new Error("not ready to verify: connect ECONNREFUSED 127.0.0.1:3310")),
  ...(advisory ? { advisory } : {}),
});

it("reports what a check says beyond ok, and stays ready while an advisory check fails", async () => {
  expect(await readyz([database, { name: "scanner", advisory: true, check: async () => "test signatures only" }])).toEqual({
    status: 200,
    body: { status: "ok", checks: { database: "ok", scanner: "test signatures only" } },
  });
  expect(await readyz([database, down("scanner", true)])).toEqual({
    status: 200,
    body: { status: "ok", checks: { database: "ok", scanner: "not ready to verify: connect ECONNREFUSED 127.0.0.1:3310" } },
  });
});

it("is not ready when a counted check fails", async () => {
  expect((await readyz([database, down("object_store")])).status).toBe(503);
});
