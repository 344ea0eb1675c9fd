import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { startCabinetGateway, type CabinetHarness } from "./support/cabinet-harness";

/**
 * A service that dies in the middle of its answer (a CSV export whose next page's query failed, a crash):
 * the gateway cuts the client's answer too, so the client sees a broken download at once instead of
 * waiting forever for the rest.
 */
let files: Server;
let h: CabinetHarness;
beforeAll(async () => {
  files = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/csv" });
    res.write("id,status\r\n");
    setTimeout(() => res.destroy(), 50);
  });
  await new Promise<void>((resolve) => files.listen(0, "127.0.0.1", resolve));
  h = await startCabinetGateway({ services: { files: `http://127.0.0.1:${(files.address() as AddressInfo).port}` } });
});
afterAll(async () => {
  await h.close();
  await new Promise((resolve) => files.close(resolve));
});

it("cuts the client's answer when the service's answer is cut", async () => {
  const account = await h.account({ scopes: ["files:read"] });
  const res = await fetch(`${h.url}/v1/files`, { headers: { authorization: `Bearer ${account.key}` }, signal: AbortSignal.timeout(10_000) });
  expect(res.status).toBe(200);
  const outcome = await res.text().then(
    () => "ended as if whole",
    (err: Error) => (err.name === "TimeoutError" ? "still waiting after 10 s" : "cut"),
  );
  expect(outcome).toBe("cut");
});
