import { randomUUID } from "node:crypto";
import { signMessage } from "@meter/messaging";
import { publishByHand, testKeys } from "@meter/testing";
import { ADMIN_TOKEN, startGateway, type GatewayHarness } from "./support/gateway-harness";

let g: GatewayHarness | undefined;

afterEach(async () => {
  await g?.close();
  g = undefined;
});

const models = (url: string, key: string) => fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// Each test starts its own gateway processes (two replicas in the first): over 30 s on a loaded machine.
jest.setTimeout(90_000);

describe("key revocation", () => {
  it("reaches every gateway process over the bus within 1 s, long before the cache TTL", async () => {
    // A 5 s TTL (the maximum): a refusal within 1 s can only come from the revocation event.
    // Both replicas listen on billing's own broker, where its outbox publishes the revocation.
    g = await startGateway({ replicas: 2, keyCacheTtlMs: 5_000 });
    const gw = g;
    await until(() => gw.hearingRevocations(), 10_000, "gateways subscribed");
    const { key, keyId } = await gw.account({ scopes: ["text"] });
    for (const url of gw.urls) expect(await models(url, key)).toBe(200);

    const revoke = await fetch(`${gw.url}/admin/v1/keys/${keyId}/revoke`, { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(revoke.status).toBe(200);
    const revokedAt = Date.now();
    const heardBy = () => gw.revocationsHeard().filter((h) => h.keyId === keyId);
    await until(() => heardBy().length === gw.urls.length, 10_000, "heard by every gateway");
    // Measured to the moment each process heard it, not through HTTP round trips that a loaded machine slows.
    expect(Math.max(...heardBy().map((h) => h.at)) - revokedAt).toBeLessThan(1_000);
    // Heard is refused: at once, on every process, with the key still well inside its cache window.
    for (const url of gw.urls) expect(await models(url, key)).toBe(401);
  });

  it("ignores a revocation billing-ledger did not sign: the key stays usable, the refusal is counted", async () => {
    g = await startGateway({ keyCacheTtlMs: 5_000 });
    const gw = g;
    await until(() => gw.hearingRevocations(), 10_000, "gateway subscribed");
    const { key, keyId } = await gw.account({ scopes: ["text"] });
    expect(await models(gw.url, key)).toBe(200);

    const url = gw.stack.env.RABBITMQ_URL!;
    const content = JSON.stringify({ version: "v1", key_id: keyId });
    const byHand = (headers: Record<string, string>, messageId = randomUUID()) =>
      publishByHand(url, { routingKey: "billing.key.revoked", content, messageId, headers });
    await byHand({});
    // A real signature, but text may not publish revocations.
    const fromText = randomUUID();
    await byHand(signMessage(testKeys("text"), { routingKey: "billing.key.revoked", messageId: fromText, body: Buffer.from(content) }), fromText);

    const refused = async (reason: string) => {
      const text = await (await fetch(`${gw.internalUrl}/metrics`)).text();
      const line = text.split("\n").find((l) => l.startsWith("bus_messages_refused_total{") && l.includes(`reason="${reason}"`));
      return Number(line?.split(" ").pop() ?? 0);
    };
    // Until both were heard and refused, or (the old behaviour) the key was dropped.
    await until(
      async () => ((await refused("unsigned")) >= 1 && (await refused("forbidden-producer")) >= 1) || (await models(gw.url, key)) === 401,
      10_000,
      "the forged revocations handled",
    );
    expect(await models(gw.url, key)).toBe(200);
    expect(gw.revocationsHeard().filter((h) => h.keyId === keyId)).toEqual([]);
  });

  it("leaves the gateway serving when the broker is down, the TTL still ending a revoked key", async () => {
    // Nothing listens on port 1: the gateway keeps trying in the background and serves meanwhile.
    g = await startGateway({ gatewayRabbitmqUrl: "amqp://guest:guest@127.0.0.1:1/", keyCacheTtlMs: 300 });
    const gw = g;
    const { key, keyId } = await gw.account({ scopes: ["text"] });
    expect(await models(gw.url, key)).toBe(200);
    expect((await fetch(`${gw.internalUrl}/readyz`)).status).toBe(200);
    expect(gw.hearingRevocations()).toBe(false);

    const revoke = await fetch(`${gw.url}/admin/v1/keys/${keyId}/revoke`, { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(revoke.status).toBe(200);
    await until(async () => (await models(gw.url, key)) === 401, 2_000, "revoked by the TTL");
  });
});
