import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { generateInternalKeySet, InternalAuth, InternalClient, parseInternalKeys } from "@meter/service-kit";
import { BillingClient, BillingUnreachable } from "./billing-client";

/**
 * Billing dies while a batch of hold placements is in flight: it may have committed them. Every
 * placement of that batch must come back as "outcome unknown" (the caller keeps its request and asks
 * again later), never "not delivered" (the caller would forget the request and leave the hold behind).
 */
let server: Server;
let billing: BillingClient;
let http: InternalClient;
const batchSizes: number[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const size = (JSON.parse(body) as { ops: unknown[] }).ops.length;
      batchSizes.push(size);
      if (size === 1) {
        // The first placement goes alone and is refused as billing would.
        res.writeHead(402, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { type: "payment_required", code: "insufficient_balance", message: "no money" } }));
        return;
      }
      // A batch was read (and, for all the client can tell, applied); then the process is gone.
      req.socket.destroy();
      server.close();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const keys = generateInternalKeySet();
  const auth = new InternalAuth(parseInternalKeys("text", keys.signingKeys.text, keys.publicKeys));
  http = new InternalClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, auth, audience: "billing-ledger" });
  billing = new BillingClient(http);
});
afterAll(async () => {
  await http.close();
  server.close();
});

it("answers every placement of a batch whose answer was lost as unknown, never as not delivered", async () => {
  const place = (n: number) =>
    billing
      .placeHold({
        hold_id: `00000000-0000-4000-8000-00000000000${n}`,
        key_id: "00000000-0000-4000-8000-000000000000",
        amount_microrub: 1000,
        operation: "text",
        model: "m",
        source: "text",
        owner_ref: `00000000-0000-4000-8000-00000000000${n}`,
      })
      .then(
        () => "placed",
        (e: unknown) => (e instanceof BillingUnreachable ? e.delivery : String(e)),
      );
  // The first goes at once, alone; the four after it wait for it and travel together.
  const outcomes = await Promise.all([1, 2, 3, 4, 5].map(place));
  expect(batchSizes).toEqual([1, 4]);
  expect(outcomes).toEqual(["AppError: no money", "unknown", "unknown", "unknown", "unknown"]);
});
