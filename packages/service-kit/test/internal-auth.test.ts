import request from "supertest";
import type { Express } from "express";
import { UNSIGNED_PAYLOAD, type Deployable, type Identity } from "@meter/contracts";
import {
  createLogger,
  createServiceApp,
  generateInternalKeyPair,
  generateInternalKeySet,
  InternalAuth,
  InternalKeyError,
  jsonBody,
  Metrics,
  onlyFrom,
  parseInternalKeys,
  requireIdentity,
} from "../src";

const keys = generateInternalKeySet();
// The MAC scheme, what every deployable signs once an upgrade is done (upgrade-steps.test.ts has the others).
const MAC = { sign: "mac", accept: "both" } as const;
const authOf = (self: Deployable, publicKeys = keys.publicKeys, signingKey = keys.signingKeys[self]) =>
  new InternalAuth(parseInternalKeys(self, signingKey, publicKeys), MAC);

/** billing-ledger's doors, as its app mounts them: admin from the gateway, internal calls from text. */
function billingApp(auth = authOf("billing-ledger")): Express {
  return createServiceApp({ logger: createLogger("t", "silent"), metrics: new Metrics("t"), readiness: [] }, (app) => {
    app.use("/admin", requireIdentity(auth, { kinds: ["admin"], from: ["gateway"] }), jsonBody({ limit: "1mb" }));
    app.use("/internal", requireIdentity(auth, { kinds: ["service"], from: ["text", "gateway"] }), jsonBody({ limit: "1mb" }));
    app.use("/upload", requireIdentity(auth, { kinds: ["service"], from: ["text"], streamedBody: true }));
    app.post(["/admin/credit", "/internal/op"], (req, res) => {
      res.json({ identity: req.identity, caller: req.caller, body: req.body as unknown });
    });
    app.post("/internal/gateway-only", onlyFrom("gateway"), (_req, res) => {
      res.json({ ok: true });
    });
    app.put("/upload", (req, res) => {
      req.resume();
      req.on("end", () => res.json({ ok: true }));
    });
  });
}

const ADMIN: Identity = { kind: "admin" };
const TEXT: Identity = { kind: "service", service: "text" };

function signed(
  app: Express,
  signer: Deployable,
  identity: Identity,
  path: string,
  body: unknown,
  opts: { signPath?: string; audience?: Deployable; signBody?: string } = {},
) {
  const payload = JSON.stringify(body);
  const headers = authOf(signer).sign(identity, {
    audience: opts.audience ?? "billing-ledger",
    method: "POST",
    path: opts.signPath ?? path,
    body: opts.signBody ?? payload,
  });
  return { headers, send: () => request(app).post(path).set(headers).set("content-type", "application/json").send(payload) };
}

describe("signed internal calls", () => {
  const app = billingApp();

  it("let in a call signed by an allowed caller for this service, with its identity and body", async () => {
    const res = await signed(app, "gateway", ADMIN, "/admin/credit", { amount: 5 }).send().expect(200);
    expect(res.body).toEqual({ identity: ADMIN, caller: "gateway", body: { amount: 5 } });
  });

  it("refuse an unsigned call", async () => {
    const res = await request(app).post("/admin/credit").send({ amount: 5 }).expect(401);
    expect(res.body.error.code).toBe("authentication_required");
  });

  it("refuse a signed call whose body was swapped: credit any amount is not possible", async () => {
    const { headers } = signed(app, "gateway", ADMIN, "/admin/credit", { amount: 5 });
    const res = await request(app).post("/admin/credit").set(headers).set("content-type", "application/json").send({ amount: 5_000_000 }).expect(401);
    expect(res.body.error.message).toBe("internal authentication failed");
    expect(res.headers["x-meter-internal-refusal"]).toBe("1");
  });

  it("refuse the same signed call a second time (a replay), even unchanged", async () => {
    const call = signed(app, "gateway", ADMIN, "/admin/credit", { amount: 5 });
    await call.send().expect(200);
    const again = await call.send().expect(401);
    // Why is for the log, not the caller (a public client could be handed this answer).
    expect(again.body.error.message).toBe("internal authentication failed");
  });

  it("refuse a signature made for another path or another service", async () => {
    await signed(app, "gateway", ADMIN, "/admin/credit", {}, { signPath: "/admin/other" }).send().expect(401);
    await signed(app, "gateway", ADMIN, "/admin/credit", {}, { audience: "files" }).send().expect(401);
  });

  it("refuse a stale signature", async () => {
    const payload = "{}";
    const headers = authOf("gateway").sign(ADMIN, { audience: "billing-ledger", method: "POST", path: "/admin/credit", body: payload }, Date.now() - 120_000);
    await request(app).post("/admin/credit").set(headers).set("content-type", "application/json").send(payload).expect(401);
  });

  it("refuse a key that is not on the public list", async () => {
    const stranger = generateInternalKeySet();
    const forger = new InternalAuth(parseInternalKeys("gateway", stranger.signingKeys.gateway, stranger.publicKeys));
    const payload = "{}";
    const headers = forger.sign(ADMIN, { audience: "billing-ledger", method: "POST", path: "/admin/credit", body: payload });
    await request(app).post("/admin/credit").set(headers).set("content-type", "application/json").send(payload).expect(401);
  });

  it("refuse a call made with a pair key the signer shares with this service, but under another caller's key id", async () => {
    // billing-ledger holds the MAC key of gateway -> billing-ledger and of billing-ledger -> text, never
    // that of gateway -> text: naming the gateway's key id, it cannot make text take its call.
    const gatewayKid = keys.signingKeys.gateway.split(".")[0]!;
    const billing = parseInternalKeys("billing-ledger", keys.signingKeys["billing-ledger"], keys.publicKeys);
    const impostor = new InternalAuth({ self: "gateway", signing: { kid: gatewayKid, key: billing.signing.key }, trusted: billing.trusted }, MAC);
    const textApp = createServiceApp({ logger: createLogger("t", "silent"), metrics: new Metrics("t"), readiness: [] }, (app) => {
      app.use(requireIdentity(authOf("text"), { kinds: ["admin", "key", "service"], from: ["gateway", "billing-ledger"] }), jsonBody({ limit: "1mb" }));
      app.post("/v1/messages", (req, res) => {
        res.json({ caller: req.caller });
      });
    });
    const sign = (auth: InternalAuth) => auth.sign(ADMIN, { audience: "text", method: "POST", path: "/v1/messages", body: "{}" });
    await request(textApp).post("/v1/messages").set(sign(impostor)).set("content-type", "application/json").send("{}").expect(401);
    const genuine = await request(textApp)
      .post("/v1/messages")
      .set(sign(authOf("gateway")))
      .set("content-type", "application/json")
      .send("{}")
      .expect(200);
    expect(genuine.body).toEqual({ caller: "gateway" });
  });

  it("let only the gateway speak for the operator or a key holder, and a service only as itself", async () => {
    // The files worker parses untrusted files: even with its genuine key it cannot sign an admin.
    const asAdmin = await signed(app, "files-worker", ADMIN, "/admin/credit", {}).send().expect(401);
    expect(asAdmin.body.error.message).toBe("internal authentication failed");
    await signed(
      app,
      "text",
      { kind: "key", key_id: crypto.randomUUID(), user_id: crypto.randomUUID(), organization_id: crypto.randomUUID(), scopes: ["text"] },
      "/internal/op",
      {},
    )
      .send()
      .expect(401);
    await signed(app, "text", { kind: "service", service: "media-jobs" }, "/internal/op", {}).send().expect(401);
  });

  it("refuse a genuine caller that this door or route does not take (403)", async () => {
    await signed(app, "media-jobs", { kind: "service", service: "media-jobs" }, "/internal/op", {}).send().expect(403);
    await signed(app, "text", TEXT, "/internal/gateway-only", {}).send().expect(403);
    await signed(app, "gateway", { kind: "service", service: "gateway" }, "/internal/gateway-only", {}).send().expect(200);
  });

  it("take an unsigned (streamed) body only where the door says so", async () => {
    await signed(app, "text", TEXT, "/internal/op", {}, { signBody: UNSIGNED_PAYLOAD }).send().expect(401);
    const headers = authOf("text").sign(TEXT, { audience: "billing-ledger", method: "PUT", path: "/upload", body: UNSIGNED_PAYLOAD });
    await request(app).put("/upload").set(headers).send(Buffer.alloc(1000)).expect(200);
  });
});

describe("key rotation", () => {
  it("accepts the old and the new key of a caller while both are listed, and the old no longer once it is dropped", async () => {
    const next = generateInternalKeyPair("gateway");
    const both = `${keys.publicKeys},${next.publicKey}`;
    const during = billingApp(authOf("billing-ledger", both));
    const oldGateway = authOf("gateway", both);
    const newGateway = authOf("gateway", both, next.signingKey);
    for (const signer of [oldGateway, newGateway]) {
      const headers = signer.sign(ADMIN, { audience: "billing-ledger", method: "POST", path: "/admin/credit", body: "{}" });
      await request(during).post("/admin/credit").set(headers).set("content-type", "application/json").send("{}").expect(200);
    }
    const withoutOld = keys.publicKeys
      .split(",")
      .filter((k) => !k.startsWith("gateway:"))
      .concat(next.publicKey)
      .join(",");
    const after = billingApp(authOf("billing-ledger", withoutOld));
    const stale = oldGateway.sign(ADMIN, { audience: "billing-ledger", method: "POST", path: "/admin/credit", body: "{}" });
    await request(after).post("/admin/credit").set(stale).set("content-type", "application/json").send("{}").expect(401);
  });

  it("reaches a service before and after it switches to its new key, while both are listed", async () => {
    const next = generateInternalKeyPair("billing-ledger");
    const both = `${keys.publicKeys},${next.publicKey}`;
    const gateway = authOf("gateway", both);
    for (const billing of [authOf("billing-ledger", both), authOf("billing-ledger", both, next.signingKey)]) {
      const headers = gateway.sign(ADMIN, { audience: "billing-ledger", method: "POST", path: "/admin/credit", body: "{}" });
      await request(billingApp(billing)).post("/admin/credit").set(headers).set("content-type", "application/json").send("{}").expect(200);
    }
  });

  it("refuses settings where the public list does not hold this process's own key", () => {
    const other = generateInternalKeyPair("text");
    expect(() => parseInternalKeys("text", other.signingKey, keys.publicKeys)).toThrow(InternalKeyError);
    expect(() => parseInternalKeys("text", "not-a-key", keys.publicKeys)).toThrow(InternalKeyError);
    expect(() => parseInternalKeys("text", keys.signingKeys.text, "nonsense:k1.AAAA")).toThrow(InternalKeyError);
  });
});
