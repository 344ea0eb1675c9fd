import { randomUUID } from "node:crypto";
import type { HoldOp } from "@meter/contracts";
import { BusUnavailableError } from "@meter/messaging";
import { AppError, createLogger } from "@meter/service-kit";
import { HoldCommandsAdapter } from "./hold-commands.adapter";

const logger = createLogger("test", "silent");

/** A bus that is up or down, and billing's hold-ops answering each op as `answer` says. */
function setup(opts: { connected: boolean; publishFails?: boolean; answer?: (op: HoldOp) => Promise<unknown> }) {
  const published: string[] = [];
  const overHttp: HoldOp[] = [];
  const bus = {
    isConnected: () => opts.connected,
    publish: async (routingKey: string) => {
      if (!opts.connected || opts.publishFails) throw new BusUnavailableError("no confirm in time");
      published.push(routingKey);
      return "published";
    },
  };
  const billing = {
    resolve: async (op: HoldOp) => {
      overHttp.push(op);
      return (opts.answer ?? (async () => ({})))(op);
    },
  };
  return { adapter: new HoldCommandsAdapter(bus as never, billing as never, logger), published, overHttp };
}

const allowance = { allowance_id: randomUUID(), key_id: randomUUID(), reserved_microrub: 242, operation: "text" as const, model: "m", owner_ref: "r" };

it("a hold command goes on the bus while the broker takes it", async () => {
  const { adapter, published, overHttp } = setup({ connected: true });
  await adapter.publish("billing.hold.settle", { version: "v1", hold_id: randomUUID(), amount_microrub: 43, allowance });
  expect(published).toEqual(["billing.hold.settle"]);
  expect(overHttp).toEqual([]);
});

it("with the broker down or not confirming, the same settle, release or close goes to billing over HTTP", async () => {
  const hold = randomUUID();
  for (const state of [{ connected: false }, { connected: true, publishFails: true }]) {
    const { adapter, published, overHttp } = setup(state);
    await adapter.publish("billing.hold.settle", { version: "v1", hold_id: hold, amount_microrub: 43, allowance }, { messageId: hold });
    await adapter.publish("billing.hold.release", { version: "v1", hold_id: allowance.allowance_id, reason: "allowance closed", used_microrub: 242 });
    expect(published).toEqual([]);
    expect(overHttp).toEqual([
      { op: "settle", hold_id: hold, amount_microrub: 43, allowance },
      { op: "release", hold_id: allowance.allowance_id, reason: "allowance closed", used_microrub: 242 },
    ]);
  }
});

it("a command billing already resolved is delivered; one it cannot take stays in the outbox; other messages wait for the broker", async () => {
  const resolved = setup({ connected: false, answer: async () => Promise.reject(new AppError("hold_already_resolved", "already released")) });
  await expect(resolved.adapter.publish("billing.hold.settle", { version: "v1", hold_id: randomUUID(), amount_microrub: 1 })).resolves.toBeDefined();

  const unknown = setup({ connected: false, answer: async () => Promise.reject(new AppError("not_found", "no such hold")) });
  await expect(unknown.adapter.publish("billing.hold.settle", { version: "v1", hold_id: randomUUID(), amount_microrub: 1 })).rejects.toThrow("no such hold");

  const other = setup({ connected: false });
  await expect(other.adapter.publish("billing.catalog.changed", { version: "v1", model_id: "m" })).rejects.toThrow(BusUnavailableError);
  expect(other.overHttp).toEqual([]);
});
