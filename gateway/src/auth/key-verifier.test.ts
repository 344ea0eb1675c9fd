import { randomUUID } from "node:crypto";
import type { KeyIdentity } from "@meter/contracts";
import { KeyVerifier } from "./key-verifier";

/** A billing client whose key lookups the test answers by hand, one at a time. */
function manualBilling() {
  const pending: ((identity: KeyIdentity | null) => void)[] = [];
  const verifyKey = jest.fn(() => new Promise<KeyIdentity | null>((resolve) => pending.push(resolve)));
  return {
    client: { verifyKey },
    calls: () => verifyKey.mock.calls.length,
    /** Answers the oldest open lookup: the key is active and belongs to `keyId`. */
    answerActive(keyId: string) {
      const answer = pending.shift();
      if (!answer) throw new Error("no lookup is waiting");
      answer({ kind: "key", key_id: keyId, user_id: randomUUID(), organization_id: randomUUID(), scopes: ["text"] });
    },
  };
}

let now = 0;
beforeEach(() => {
  now = 1_000_000;
  jest.spyOn(Date, "now").mockImplementation(() => now);
});
afterEach(() => jest.restoreAllMocks());

test("the cache window counts from the start of the lookup, not its end", async () => {
  const billing = manualBilling();
  const keys = new KeyVerifier(billing.client, 500);
  const keyId = randomUUID();

  const first = keys.verify("mtr_key");
  now += 400; // billing takes 400 ms to answer
  billing.answerActive(keyId);
  await expect(first).resolves.toMatchObject({ key_id: keyId });

  now += 50; // 450 ms after the lookup began: still trusted
  await expect(keys.verify("mtr_key")).resolves.toMatchObject({ key_id: keyId });
  expect(billing.calls()).toBe(1);

  now += 100; // 550 ms after the lookup began, though only 150 ms after its answer: asked again
  const again = keys.verify("mtr_key");
  expect(billing.calls()).toBe(2);
  billing.answerActive(keyId);
  await again;
});

test("a revocation heard on the bus refuses a cached key at once, without asking billing", async () => {
  const billing = manualBilling();
  const keys = new KeyVerifier(billing.client, 5_000);
  const keyId = randomUUID();
  const first = keys.verify("mtr_key");
  billing.answerActive(keyId);
  await first;

  keys.revoke(keyId);
  await expect(keys.verify("mtr_key")).rejects.toMatchObject({ code: "invalid_api_key" });
  expect(billing.calls()).toBe(1);
});

test("a lookup that billing answered before the revocation cannot bring the key back", async () => {
  const billing = manualBilling();
  const keys = new KeyVerifier(billing.client, 5_000);
  const keyId = randomUUID();

  const racing = keys.verify("mtr_key");
  keys.revoke(keyId); // heard while billing's (older) answer is on its way
  billing.answerActive(keyId);
  await expect(racing).rejects.toMatchObject({ code: "invalid_api_key" });
  await expect(keys.verify("mtr_key")).rejects.toMatchObject({ code: "invalid_api_key" });
});

test("a key that expires is trusted no longer than its expires_at, whatever the cache window", async () => {
  const keyId = randomUUID();
  const identity: KeyIdentity = { kind: "key", key_id: keyId, user_id: randomUUID(), organization_id: randomUUID(), scopes: ["text"] };
  // Billing answers the key as active until 1 s from now, and refuses it after that.
  const verifyKey = jest.fn(() => Promise.resolve(Date.now() < 1_001_000 ? { ...identity, expires_at: new Date(1_001_000).toISOString() } : null));
  const keys = new KeyVerifier({ verifyKey }, 4_000);

  // The identity alone is what the gateway signs for the services.
  await expect(keys.verify("mtr_key")).resolves.toEqual(identity);
  now += 900;
  await expect(keys.verify("mtr_key")).resolves.toEqual(identity);
  expect(verifyKey).toHaveBeenCalledTimes(1);

  now += 100; // its expires_at: 3 s before the cache window would have ended
  await expect(keys.verify("mtr_key")).rejects.toMatchObject({ code: "invalid_api_key" });
  expect(verifyKey).toHaveBeenCalledTimes(2);
});
