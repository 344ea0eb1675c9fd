import request from "supertest";
import type { Express } from "express";
import { InternalHeaders, type Identity } from "@meter/contracts";
import {
  createInternalAuth,
  createLogger,
  createServiceApp,
  generateInternalKeySet,
  jsonBody,
  Metrics,
  parseInternalKeys,
  requireIdentity,
  type InternalAuth,
} from "../src";
import { signAs100, verifiesAs100 } from "./support/release-1.0.0";

/**
 * A rolling upgrade from release 1.0.0 (docs/deploy.md, Upgrading): for a while text runs 1.0.0 and
 * billing-ledger 1.1.0, or the reverse, and they call each other both ways. 1.0.0 signs and verifies
 * Ed25519 only (support/release-1.0.0.ts); a 1.1.0 process signs what INTERNAL_AUTH_SIGN says and
 * believes what INTERNAL_AUTH_ACCEPT says, by default Ed25519 and both.
 */
const keys = generateInternalKeySet();
const TEXT: Identity = { kind: "service", service: "text" };
const BILLING: Identity = { kind: "service", service: "billing-ledger" };
const settings = (self: "text" | "billing-ledger", extra: Record<string, string> = {}) => ({
  INTERNAL_SIGNING_KEY: keys.signingKeys[self],
  INTERNAL_PUBLIC_KEYS: keys.publicKeys,
  ...extra,
});
const keysOf = (self: "text" | "billing-ledger") => parseInternalKeys(self, keys.signingKeys[self], keys.publicKeys);

/** billing-ledger 1.1.0's internal door, as its app mounts it. */
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

describe("text on 1.0.0 calling billing-ledger on 1.1.0", () => {
  it("is believed with the default settings (accept both)", async () => {
    const res = await call(billingApp(createInternalAuth("billing-ledger", settings("billing-ledger"))), signAs100(keysOf("text"), TEXT, target)).expect(200);
    expect(res.body).toEqual({ caller: "text", body: JSON.parse(body) as unknown });
  });

  it("is refused once billing-ledger accepts MACs only: the last step, after every caller moved", async () => {
    const auth = createInternalAuth("billing-ledger", settings("billing-ledger", { INTERNAL_AUTH_ACCEPT: "mac-only" }));
    await call(billingApp(auth), signAs100(keysOf("text"), TEXT, target)).expect(401);
    // What billing-ledger logs: the setting that refused it.
    expect(auth.verify(signAs100(keysOf("text"), TEXT, target), "POST", target.path)).toEqual({
      ok: false,
      reason: expect.stringMatching(/accepts MACs only/),
    });
  });
});

describe("billing-ledger on 1.1.0 calling text on 1.0.0", () => {
  const toText = { audience: "text", method: "POST", path: "/internal/holds/audit", body } as const;

  it("is believed with the default settings (sign Ed25519)", () => {
    const headers = createInternalAuth("billing-ledger", settings("billing-ledger")).sign(BILLING, toText);
    expect(verifiesAs100(keysOf("text"), headers, "POST", toText.path)).toBe(true);
  });

  it("is refused by 1.0.0 when it signs MACs: why INTERNAL_AUTH_SIGN=mac waits until no 1.0.0 is left", () => {
    const headers = createInternalAuth("billing-ledger", settings("billing-ledger", { INTERNAL_AUTH_SIGN: "mac" })).sign(BILLING, toText);
    expect(headers[InternalHeaders.signature]).toMatch(/^v2;/);
    expect(verifiesAs100(keysOf("text"), headers, "POST", toText.path)).toBe(false);
  });
});

describe("both on 1.1.0, through the steps of the upgrade", () => {
  it.each([
    ["step 1: sign Ed25519, accept both", {}, {}],
    ["step 2: some sign MACs, all accept both", { INTERNAL_AUTH_SIGN: "mac" }, {}],
    ["step 3: all sign MACs, accept MACs only", { INTERNAL_AUTH_SIGN: "mac" }, { INTERNAL_AUTH_SIGN: "mac", INTERNAL_AUTH_ACCEPT: "mac-only" }],
  ])("%s: every call is believed", async (_step, caller: Record<string, string>, callee: Record<string, string>) => {
    const app = billingApp(createInternalAuth("billing-ledger", settings("billing-ledger", callee)));
    await call(app, createInternalAuth("text", settings("text", caller)).sign(TEXT, target)).expect(200);
  });
});
