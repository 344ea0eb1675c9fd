import { generateGrantKeyPair, parseGrantKeys, signGrant, verifyGrant, type Grant } from "./grant-keys";

const pair = generateGrantKeyPair("grant-test-1");
const keys = parseGrantKeys(pair.signingKey, pair.publicKey);
const grant: Grant = {
  hold_id: "6f1c2a3b-4d5e-4f60-9a1b-2c3d4e5f6a7b",
  kind: "request",
  source: "text",
  organization_id: "0d9f6a6e-2b1c-4b8e-9f3a-1c2d3e4f5a6b",
  key_id: "1d9f6a6e-2b1c-4b8e-9f3a-1c2d3e4f5a6b",
  amount_microrub: 5_000,
  expires_at: new Date("2030-01-01T00:00:00.000Z"),
};
const { expires_at: _expiry, ...claim } = grant;

it("verifies a grant's signature for exactly what was signed, with its expiry, and nothing else", () => {
  const signature = signGrant(keys, grant);
  expect(signature).toMatch(/^grant-test-1\.1893456000\./);
  expect(verifyGrant(keys.trusted, claim, signature)).toEqual({ ok: true, grant });
  expect(verifyGrant(keys.trusted, { ...claim, kind: "allowance" }, signature)).toEqual({ ok: false, refused: "bad_signature" });
  expect(verifyGrant(keys.trusted, claim, signature.replace(".1893456000.", ".1993456000."))).toEqual({ ok: false, refused: "bad_signature" });
  expect(verifyGrant(keys.trusted, claim, null)).toEqual({ ok: false, refused: "unsigned" });
  expect(verifyGrant(keys.trusted, claim, signature.replace("grant-test-1", "grant-other"))).toEqual({ ok: false, refused: "unknown_key" });
});

it("keeps verifying what an earlier key signed while its public key stays listed after a rotation", () => {
  const next = generateGrantKeyPair("grant-test-2");
  const rotated = parseGrantKeys(next.signingKey, `${pair.publicKey}, ${next.publicKey}`);
  expect(verifyGrant(rotated.trusted, claim, signGrant(keys, grant))).toMatchObject({ ok: true });
  expect(verifyGrant(rotated.trusted, claim, signGrant(rotated, grant))).toMatchObject({ ok: true });
  expect(verifyGrant(parseGrantKeys(next.signingKey, next.publicKey).trusted, claim, signGrant(keys, grant))).toEqual({ ok: false, refused: "unknown_key" });
});

it("refuses settings that do not fit: a public list without the signing key's own", () => {
  expect(() => parseGrantKeys(pair.signingKey, generateGrantKeyPair("grant-test-1").publicKey)).toThrow(/must list GRANT_SIGNING_KEY's own public key/);
  expect(() => parseGrantKeys("not-a-key", pair.publicKey)).toThrow(/GRANT_SIGNING_KEY must be/);
  expect(() => parseGrantKeys(pair.signingKey, `${pair.publicKey},${pair.publicKey}`)).toThrow(/listed twice/);
});
