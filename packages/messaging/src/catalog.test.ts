import { randomUUID } from "node:crypto";
import { parseMessage } from "./catalog";
import { InvalidMessageError } from "./errors";

test("a valid payload comes back parsed, without keys the schema does not know", () => {
  const keyId = randomUUID();
  expect(parseMessage("billing.key.revoked", { version: "v1", key_id: keyId, extra: 1 })).toEqual({ version: "v1", key_id: keyId });
});

test("an invalid payload names the field that failed", () => {
  expect(() => parseMessage("billing.hold.settle", { version: "v1", hold_id: randomUUID(), amount_microrub: 1.5 })).toThrow(/amount_microrub/);
});

test("a routing key outside the catalog is refused", () => {
  expect(() => parseMessage("billing.unknown", {})).toThrow(InvalidMessageError);
});
