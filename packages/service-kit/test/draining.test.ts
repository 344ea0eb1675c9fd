import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { closeConnectionsWhileDraining, healthRoutes, isDraining, startDraining } from "../src";

/**
 * The drain on SIGTERM (lifecycle.ts serve()): readiness turns 503 at once, while the server still
 * answers, every answer closing its connection. The state is the process's; each test file has its own.
 */
let server: Server;
let url: string;
beforeAll(async () => {
  const app = express();
  app.use(healthRoutes([{ name: "database", check: async () => undefined }]));
  app.get("/work", (_req, res) => void res.json({ done: true }));
  server = createServer(app);
  closeConnectionsWhileDraining(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

it("is ready and keeps connections alive until the drain starts; then not ready, still serving, closing each connection", async () => {
  expect(isDraining()).toBe(false);
  const before = await fetch(`${url}/readyz`);
  expect({ status: before.status, body: (await before.json()) as unknown }).toEqual({ status: 200, body: { status: "ok", checks: { database: "ok" } } });
  const kept = await fetch(`${url}/work`);
  expect(kept.headers.get("connection")).toBe("keep-alive");
  await kept.arrayBuffer();

  startDraining();
  const after = await fetch(`${url}/readyz`);
  expect({ status: after.status, body: (await after.json()) as unknown }).toEqual({ status: 503, body: { status: "draining", checks: {} } });
  const work = await fetch(`${url}/work`);
  expect(work.status).toBe(200);
  expect(work.headers.get("connection")).toBe("close");
});
