import { randomUUID } from "node:crypto";
import { createTestVhost, testKeys, type TestVhost } from "@meter/testing";
import { connectBus, InvalidMessageError, outboxInsertSql, startOutboxRelay, writeOutboxMessage, type Bus, type Consumer, type OutboxRelay } from "../src";
import { createOutboxDatabase, type OutboxDatabase } from "./support/outbox-database";
import { eventually, sleep } from "./support/waiting";

let vhost: TestVhost;
let database: OutboxDatabase;
let bus: Bus;
let consumer: Consumer;
/** How many times each message id reached the consumer. */
const received = new Map<string, number>();
const relays: OutboxRelay[] = [];
const extraBuses: Bus[] = [];

beforeAll(async () => {
  [vhost, database] = await Promise.all([createTestVhost(), createOutboxDatabase()]);
  bus = await connectBus({
    topology: "declare",
    url: vhost.url,
    name: "outbox-test",
    keys: testKeys("text"),
    reconnect: { initialDelayMs: 50, maxDelayMs: 200 },
  });
  consumer = await bus.consume({
    queue: "outbox.test",
    routingKeys: ["billing.hold.settle", "billing.key.revoked"],
    prefetch: 200,
    handler: async (_payload, meta) => {
      received.set(meta.messageId, (received.get(meta.messageId) ?? 0) + 1);
    },
  });
});

beforeEach(async () => {
  received.clear();
  await database.pool.query("TRUNCATE outbox_messages");
});

afterEach(async () => {
  await Promise.all(relays.splice(0).map((relay) => relay.stop()));
  await Promise.all(extraBuses.splice(0).map((extra) => extra.close()));
});

afterAll(async () => {
  await consumer?.stop();
  await bus?.close();
  await vhost?.drop();
  await database?.drop();
});

const settle = () => ({ version: "v1" as const, hold_id: randomUUID(), amount_microrub: 1500 });

/** Writes rows the way a service does: in a transaction with its own state change. */
async function commitRows(count: number): Promise<string[]> {
  return database.db.$transaction(async (tx) => {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push(await writeOutboxMessage(tx, "billing.hold.settle", settle()));
    return ids;
  });
}

function start(options: Partial<Parameters<typeof startOutboxRelay>[0]> = {}): OutboxRelay {
  const relay = startOutboxRelay({ db: database.db, bus, idleMs: 50, ...options });
  relays.push(relay);
  return relay;
}

async function unpublished(): Promise<number> {
  const { rows } = await database.pool.query<{ n: string }>("SELECT count(*) AS n FROM outbox_messages WHERE published_at IS NULL");
  return Number(rows[0]?.n);
}

function expectEachOnce(ids: string[]): void {
  expect(received.size).toBe(ids.length);
  for (const id of ids) expect(received.get(id)).toBe(1);
}

test("outboxInsertSql validates the payload and builds the insert", () => {
  expect(() => outboxInsertSql("billing.hold.settle", { version: "v1", hold_id: "nope", amount_microrub: 1 })).toThrow(InvalidMessageError);
  const messageId = randomUUID();
  const payload = settle();
  const insert = outboxInsertSql("billing.hold.settle", payload, messageId);
  expect(insert.messageId).toBe(messageId);
  expect(insert.params).toEqual([messageId, "billing.hold.settle", JSON.stringify(payload)]);
  expect(insert.sql).toMatch(/^INSERT INTO outbox_messages/);
});

test("rows committed with a state change are published once, and a rolled-back row never is", async () => {
  const ids = await commitRows(5);
  await database.db
    .$transaction(async (tx) => {
      await writeOutboxMessage(tx, "billing.key.revoked", { version: "v1", key_id: randomUUID() });
      throw new Error("the state change failed");
    })
    .then(undefined, () => undefined);
  const relay = start({ idleMs: 60_000 });
  relay.kick();

  await eventually(() => expectEachOnce(ids));
  // The consumer can see a message before the relay has committed its row as published.
  await eventually(async () => expect(await unpublished()).toBe(0));
  const { rows } = await database.pool.query("SELECT count(*)::int AS n FROM outbox_messages");
  expect(rows[0]).toEqual({ n: 5 });
});

test("writing the same message id twice is idempotent", async () => {
  const messageId = randomUUID();
  const payload = settle();
  await database.db.$transaction(async (tx) => {
    await writeOutboxMessage(tx, "billing.hold.settle", payload, { messageId });
    await writeOutboxMessage(tx, "billing.hold.settle", payload, { messageId });
  });
  start();
  await eventually(() => expectEachOnce([messageId]));
});

test("kick wakes an idle relay at once", async () => {
  const relay = start({ idleMs: 60_000 });
  await sleep(100);
  const [id] = await commitRows(1);
  const kickedAt = Date.now();
  relay.kick();
  await eventually(() => expectEachOnce([id!]), 5_000, 5);
  expect(Date.now() - kickedAt).toBeLessThan(1_000);
});

test("two relays on the same table publish every row exactly once", async () => {
  const otherBus = await connectBus({ topology: "declare", url: vhost.url, name: "outbox-test-2", keys: testKeys("text") });
  extraBuses.push(otherBus);
  const published = [0, 0];
  const counting = (target: Bus, index: number): Pick<Bus, "publish"> => ({
    publish: async (...args: Parameters<Bus["publish"]>) => {
      const id = await target.publish(...args);
      published[index]! += 1;
      return id;
    },
  });
  const early = await commitRows(150);
  start({ batchSize: 7, bus: counting(bus, 0) });
  start({ batchSize: 7, bus: counting(otherBus, 1) });
  const late: string[] = [];
  for (let i = 0; i < 15; i++) late.push(...(await commitRows(10)));

  const ids = [...early, ...late];
  await eventually(async () => expect(await unpublished()).toBe(0), 20_000);
  await eventually(() => expect(received.size).toBe(ids.length));
  await sleep(300);
  expectEachOnce(ids);
  // Both relays did part of the work, so they really ran side by side.
  expect(published[0]).toBeGreaterThan(0);
  expect(published[1]).toBeGreaterThan(0);
  expect(published[0]! + published[1]!).toBe(ids.length);
});

test("rows written while the broker is unreachable are published once it is back", async () => {
  const relay = start({ publishTimeoutMs: 500, retryBackoffMs: [200, 400] });
  await vhost.denyAccess();
  try {
    await vhost.closeConnections();
    await eventually(() => expect(bus.isConnected()).toBe(false));
    const ids = await commitRows(20);
    relay.kick();
    await eventually(async () => {
      const { rows } = await database.pool.query<{ attempts: number; last_error: string | null }>("SELECT attempts, last_error FROM outbox_messages");
      expect(rows.every((row) => row.attempts >= 1 && row.last_error?.includes("broker"))).toBe(true);
    });
    expect(received.size).toBe(0);

    await vhost.allowAccess();
    await eventually(async () => expect(await unpublished()).toBe(0));
    await eventually(() => expect(received.size).toBe(ids.length));
    await sleep(200);
    expectEachOnce(ids);
    const { rows } = await database.pool.query("SELECT count(*)::int AS n FROM outbox_messages WHERE last_error IS NOT NULL");
    expect(rows[0]).toEqual({ n: 0 });
  } finally {
    await vhost.allowAccess();
  }
});

test("a command whose consumer has not declared its queue yet waits in the outbox, never in the unrouted queue, and goes once it has", async () => {
  // A broker of its own: nothing here has ever declared the command queue.
  const fresh = await createTestVhost();
  const billing = await connectBus({ topology: "declare", url: fresh.url, name: "outbox-consumer", keys: testKeys("billing-ledger") });
  const producer = await connectBus({ topology: "await", url: fresh.url, name: "outbox-producer", keys: testKeys("text") });
  extraBuses.push(producer, billing);
  const spec = { queue: "outbox.commands", routingKeys: ["billing.hold.settle"] as const };
  producer.requireQueue(spec);
  try {
    start({ bus: producer, retryBackoffMs: [100] });
    const ids = await commitRows(3);
    await eventually(async () => {
      const { rows } = await database.pool.query<{ attempts: number; last_error: string | null }>("SELECT attempts, last_error FROM outbox_messages");
      expect(rows.every((row) => row.attempts >= 2 && row.last_error?.includes("not declared yet"))).toBe(true);
    });
    expect(await producer.unroutedMessageCount()).toBe(0);

    const seen: string[] = [];
    const consumer = await billing.consume({
      ...spec,
      handler: async (_payload, meta) => {
        seen.push(meta.messageId);
      },
    });
    try {
      await eventually(() => expect([...seen].sort()).toEqual([...ids].sort()));
      expect(await unpublished()).toBe(0);
      expect(await producer.unroutedMessageCount()).toBe(0);
    } finally {
      await consumer.stop();
    }
  } finally {
    await Promise.all(relays.splice(0).map((relay) => relay.stop()));
    await fresh.drop();
  }
});

test("a row the catalog rejects is parked with its error and does not hold up the others", async () => {
  const badId = randomUUID();
  await database.pool.query("INSERT INTO outbox_messages (message_id, routing_key, payload) VALUES ($1, 'billing.hold.settle', $2)", [
    badId,
    JSON.stringify({ version: "v1", hold_id: "nope" }),
  ]);
  const ids = await commitRows(3);
  start();
  await eventually(() => expectEachOnce(ids));
  // The good rows reach the consumer when the broker confirms them; the batch (and the bad row's
  // parking) commits just after.
  await eventually(async () => {
    const { rows } = await database.pool.query<{ attempts: number; last_error: string; parked: boolean; published_at: Date | null }>(
      "SELECT attempts, last_error, available_at = 'infinity' AS parked, published_at FROM outbox_messages WHERE message_id = $1",
      [badId],
    );
    expect(rows[0]).toMatchObject({ attempts: 1, parked: true, published_at: null });
    expect(rows[0]?.last_error).toContain("hold_id");
  });
});

test("published rows past the retention window are deleted; unpublished and recent ones stay", async () => {
  const [old1, old2, recent, pending] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  await database.pool.query(
    `INSERT INTO outbox_messages (message_id, routing_key, payload, published_at, available_at) VALUES
       ($1, 'billing.hold.settle', '{}', now() - interval '3 days', now()),
       ($2, 'billing.hold.settle', '{}', now() - interval '2 days', now()),
       ($3, 'billing.hold.settle', '{}', now() - interval '1 hour', now()),
       ($4, 'billing.hold.settle', '{}', NULL, 'infinity')`,
    [old1, old2, recent, pending],
  );
  start({ retentionMs: 24 * 3_600_000 });
  await eventually(async () => {
    const { rows } = await database.pool.query<{ message_id: string }>("SELECT message_id FROM outbox_messages ORDER BY message_id");
    expect(rows.map((row) => row.message_id).sort()).toEqual([recent, pending].sort());
  });
});

test("stop waits for the batch under way", async () => {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let publishing = false;
  const slowBus = {
    publish: async (...args: Parameters<Bus["publish"]>) => {
      publishing = true;
      await gate;
      return bus.publish(...args);
    },
  };
  const ids = await commitRows(1);
  const relay = startOutboxRelay({ db: database.db, bus: slowBus, idleMs: 50 });
  await eventually(() => expect(publishing).toBe(true));
  let stopped = false;
  const stopping = relay.stop().then(() => (stopped = true));
  await sleep(100);
  expect(stopped).toBe(false);
  release();
  await stopping;
  expect(await unpublished()).toBe(0);
  await eventually(() => expectEachOnce(ids));
});

/** Rows committed the way a writer that publishes them itself does: due for the poll only after a lease. */
async function commitLeased(count: number, leaseMs: number): Promise<{ message_id: string; routing_key: string; payload: unknown }[]> {
  const rows = Array.from({ length: count }, () => ({ message_id: randomUUID(), routing_key: "billing.hold.settle", payload: settle() }));
  await database.pool.query(
    `INSERT INTO outbox_messages (message_id, routing_key, payload, available_at)
     SELECT m, 'billing.hold.settle', p, now() + $3::float8 * interval '1 millisecond' FROM unnest($1::uuid[], $2::jsonb[]) AS x(m, p)`,
    [rows.map((r) => r.message_id), rows.map((r) => JSON.stringify(r.payload)), leaseMs],
  );
  return rows;
}

test("rows handed to publishNow after their commit are published at once and marked, and the poll leaves them alone", async () => {
  const published: string[] = [];
  const relay = start({
    idleMs: 20,
    bus: {
      publish: async (...args: Parameters<Bus["publish"]>) => {
        published.push(args[2]!.messageId!);
        return bus.publish(...args);
      },
    },
  });
  const rows = await commitLeased(6, 60_000);
  const [a, b] = [rows.slice(0, 3), rows.slice(3)];
  // Two commits' rows at once: their marks share a statement when they meet.
  await Promise.all([relay.publishNow(a), relay.publishNow(b)]);
  expect(await unpublished()).toBe(0);
  await eventually(() => expectEachOnce(rows.map((r) => r.message_id)));
  await sleep(200);
  expect(published.sort()).toEqual(rows.map((r) => r.message_id).sort());
});

test("a row publishNow could not publish is published by the poll once its lease ends", async () => {
  let failing = true;
  const relay = start({
    idleMs: 20,
    bus: {
      publish: async (...args: Parameters<Bus["publish"]>) => {
        if (failing) throw new Error("the broker is away");
        return bus.publish(...args);
      },
    },
  });
  const rows = await commitLeased(2, 500);
  await relay.publishNow(rows);
  expect(await unpublished()).toBe(2);
  failing = false;
  await sleep(200);
  expect(received.size).toBe(0);
  await eventually(() => expectEachOnce(rows.map((r) => r.message_id)), 5_000);
  await eventually(async () => expect(await unpublished()).toBe(0));
});

test("no transaction stays open while the broker confirms a batch", async () => {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let publishing = false;
  const slowBus = {
    publish: async (...args: Parameters<Bus["publish"]>) => {
      publishing = true;
      await gate;
      return bus.publish(...args);
    },
  };
  const ids = await commitRows(3);
  start({ bus: slowBus });
  await eventually(() => expect(publishing).toBe(true));
  const { rows } = await database.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
  );
  expect(rows[0]!.n).toBe(0);
  release();
  await eventually(() => expectEachOnce(ids));
});
