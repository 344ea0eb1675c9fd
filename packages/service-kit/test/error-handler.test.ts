import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { createLogger, errorHandler, requestId } from "../src";

/** Bytes a client controls never become a 500: a path parameter that is not percent-encoded UTF-8 is its error. */
let server: Server;
let url: string;
beforeAll(async () => {
  const app = express();
  app.use(requestId({ trustIncoming: false }));
  app.get("/v1/jobs/:id", (req, res) => void res.json({ id: req.params.id }));
  app.use(errorHandler(createLogger("test", "silent")));
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

it.each(["%ff", "%00%ff", "%E0%A4%A"])("a path parameter %s that does not decode is 400 invalid_request, with the contract's body", async (id) => {
  const res = await fetch(`${url}/v1/jobs/${id}`);
  const body = (await res.json()) as { error: { code: string; type: string; request_id: string } };
  expect(res.status).toBe(400);
  expect(body.error).toMatchObject({ code: "invalid_request", type: "invalid_request_error" });
  expect(body.error.request_id).toBe(res.headers.get("x-request-id"));
});

it("a parameter that decodes still reaches its route", async () => {
  const res = await fetch(`${url}/v1/jobs/%C3%A9`);
  expect(await res.json()).toEqual({ id: "é" });
});
