import request from "supertest";
import type { Express } from "express";
import type { Identity } from "@meter/contracts";
import { createInternalAuth, createLogger, createServiceApp, generateInternalKeySet, jsonBody, Metrics, requireIdentity, type InternalAuth } from "../src";

/**
 * The settings an upgrade turns in steps (docs/deploy.md, Upgrading): what a process signs
 * (INTERNAL_AUTH_SIGN) and what it believes (INTERNAL_AUTH_ACCEPT), each step's signer against each
 * step's verifier. Between two real releases the schemes are tested by e2e/two-releases.test.ts, which
 * runs the previous release's build beside this one.
 */
const keys = generateInternalKeySet();
const TEXT: Identity = { kind: "service", service: "text" };
const settings = (self: "text" | "billing-ledger", extra: Record<string, string> = {}) => ({
  INTERNAL_SIGNING_KEY: keys.signingKeys[self],
  INTERNAL_PUBLIC_KEYS: keys.publicKeys,
  ...extra,
});

/** billing-ledger's internal door, as its app mounts it. */
function billingApp(auth: InternalAuth): Express {
  return createServiceApp({ logger: createLogger("t", "silent"), metrics: new Metrics("t"), readiness: [] }, (app) => {
    app.use("/internal", requireIdentity(auth, { kinds: ["service"], from: ["text"] }), jsonBody({ limit: "1mb" }));
    app.post("/internal/holds", (req, res) => {
      res.json({ caller: req.caller, body: req.body as unknown });
    });
  });
}
const body = JSON.stringify({ hold_id: "h-1", amount_microrub: 1500 });
const target = { audience: "billing-ledger", method: "POST", path: "/internal/holds", body } as const;
const call = (app: Express, headers: Record<string, string>) =>
  request(app).post("/internal/holds").set(headers).set("content-type", "application/json").send(body);

describe("two processes through the steps of the upgrade", () => {
  it.each([
    ["step 1: sign Ed25519, accept both", {}, {}],
    ["step 2: some sign MACs, all accept both", { INTERNAL_AUTH_SIGN: "mac" }, {}],
    ["step 3: all sign MACs, accept MACs only", { INTERNAL_AUTH_SIGN: "mac" }, { INTERNAL_AUTH_SIGN: "mac", INTERNAL_AUTH_ACCEPT: "mac-only" }],
  ])("%s: every call is believed", async (_step, caller: Record<string, string>, callee: Record<string, string>) => {
    const app = billingApp(createInternalAuth("billing-ledger", settings("billing-ledger", callee)));
    await call(app, createInternalAuth("text", settings("text", caller)).sign(TEXT, target)).expect(200);
  });

  it("step 3 refuses a call still signed Ed25519, naming the setting: why it waits until every caller signs MACs", async () => {
    const auth = createInternalAuth("billing-ledger", settings("billing-ledger", { INTERNAL_AUTH_ACCEPT: "mac-only" }));
    const ed25519 = () => createInternalAuth("text", settings("text")).sign(TEXT, target);
    await call(billingApp(auth), ed25519()).expect(401);
    // What billing-ledger logs: the setting that refused it.
    expect(auth.verify(ed25519(), "POST", target.path)).toEqual({ ok: false, reason: expect.stringMatching(/accepts MACs only/) });
  });
});
