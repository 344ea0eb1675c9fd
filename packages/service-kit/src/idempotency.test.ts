import type { AppError } from "./app-error";
import { fingerprintOf, idempotencyRecordId, requireIdempotencyKey } from "./idempotency";

const requestIdentity = (keyId: string, endpoint: string, key: string) => idempotencyRecordId("text-request", keyId, endpoint, key);

describe("idempotencyRecordId", () => {
  it("is the same UUID for the same key, endpoint and Idempotency-Key, and another for any other", () => {
    const a = requestIdentity("k1", "messages", "idem-1");
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(requestIdentity("k1", "messages", "idem-1")).toBe(a);
    expect(requestIdentity("k2", "messages", "idem-1")).not.toBe(a);
    expect(requestIdentity("k1", "responses", "idem-1")).not.toBe(a);
    expect(requestIdentity("k1", "messages", "idem-2")).not.toBe(a);
  });

  it("cannot be made to collide by moving text between the parts", () => {
    expect(requestIdentity("k1", "messages", "x")).not.toBe(requestIdentity("k1\nmessages", "", "x"));
  });
});

describe("fingerprintOf", () => {
  it("ignores key order and formatting, not values", () => {
    expect(fingerprintOf({ a: 1, b: [1, { c: "x", d: null }] })).toBe(fingerprintOf({ b: [1, { d: null, c: "x" }], a: 1 }));
    expect(fingerprintOf({ a: 1 })).not.toBe(fingerprintOf({ a: 2 }));
    expect(fingerprintOf({ a: [1, 2] })).not.toBe(fingerprintOf({ a: [2, 1] }));
  });
});

describe("requireIdempotencyKey", () => {
  const codeOf = (h: string | undefined) => {
    try {
      return requireIdempotencyKey(h);
    } catch (e) {
      return (e as AppError).code;
    }
  };
  it("takes 1-255 printable ASCII characters, and names what is wrong otherwise", () => {
    expect(codeOf("a-b_c.9")).toBe("a-b_c.9");
    expect(codeOf(undefined)).toBe("idempotency_key_required");
    expect(codeOf("")).toBe("idempotency_key_required");
    expect(codeOf("with space")).toBe("invalid_request");
    expect(codeOf("é")).toBe("invalid_request");
    expect(codeOf("x".repeat(256))).toBe("invalid_request");
  });

  it("keeps different services' records apart", () => {
    expect(idempotencyRecordId("text-request", "k", "e", "i")).not.toBe(idempotencyRecordId("media-job", "k", "e", "i"));
  });
});
