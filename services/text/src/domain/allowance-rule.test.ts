import { randomUUID } from "node:crypto";
import { InvalidMessageError, outboxInsertSql, parseMessage } from "@meter/messaging";
import type { TextRecord } from "./text-record";
import { allowanceRelease, allowanceSpendOf } from "./allowance-rule";

const record = (allowanceId: string | null) => ({ id: randomUUID(), keyId: randomUUID(), model: "m", estimatedCost: 250, allowanceId }) as TextRecord;

describe("the allowance rule's commands to billing", () => {
  it("a closed allowance's release is a catalog message carrying the estimates used", () => {
    const [id, org] = [randomUUID(), randomUUID()];
    expect(parseMessage("billing.hold.release", allowanceRelease(id, org, 400))).toEqual({
      version: "v1",
      hold_id: id,
      reason: "allowance closed",
      organization_id: org,
      used_microrub: 400,
    });
  });

  it("a release billing could not parse is refused before it reaches the outbox", () => {
    // What closeSettled writes goes through outboxInsertSql; a fractional or negative amount never passes.
    expect(() => outboxInsertSql("billing.hold.release", allowanceRelease(randomUUID(), randomUUID(), 1.5))).toThrow(InvalidMessageError);
    expect(() => outboxInsertSql("billing.hold.release", allowanceRelease(randomUUID(), randomUUID(), -1))).toThrow(InvalidMessageError);
    expect(() => outboxInsertSql("billing.hold.release", allowanceRelease("not-an-id", randomUUID(), 1))).toThrow(InvalidMessageError);
  });

  it("a request on an allowance names it with its estimate; one with its own hold names none", () => {
    const onAllowance = record(randomUUID());
    const spend = allowanceSpendOf(onAllowance);
    expect(parseMessage("billing.hold.settle", { version: "v1", hold_id: randomUUID(), amount_microrub: 10, ...spend }).allowance).toEqual({
      allowance_id: onAllowance.allowanceId,
      key_id: onAllowance.keyId,
      reserved_microrub: 250,
      operation: "text",
      model: "m",
      owner_ref: onAllowance.id,
    });
    expect(allowanceSpendOf(record(null))).toEqual({});
  });
});
