import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { connect } from "amqplib";
import { BUS_DEPLOYABLES, type BrokerRights, type BusDeployable } from "@meter/contracts";
import { brokerUrlOf, deleteBrokerUsers, ensureBrokerUsers } from "@meter/local-infra";

const run = promisify(execFile);

/** A RabbitMQ virtual host of its own for one test file, so parallel files and runs never see each other's queues. */
export interface TestVhost {
  name: string;
  /** amqp URL into the vhost, for connectBus. */
  url: string;
  /** Closes every client connection to the vhost from the broker's side, as a broker restart would. */
  closeConnections(): Promise<void>;
  /** Takes the user's permissions away: connections to the vhost are refused until allowAccess(). */
  denyAccess(): Promise<void>;
  allowAccess(): Promise<void>;
  /**
   * One broker user per deployable with its own rights on this vhost, made by the project's setup code
   * (as npm start makes them); resolves with each one's amqp URL. Dropped with the vhost.
   */
  deployableUrls(rightsOf?: (deployable: BusDeployable) => BrokerRights): Promise<Record<BusDeployable, string>>;
  /** Gives the users deployableUrls made other rights (an upgrade's last step: this release's own), passwords kept. */
  grantRights(rightsOf?: (deployable: BusDeployable) => BrokerRights): Promise<void>;
  /** Deletes the vhost with everything in it. */
  drop(): Promise<void>;
}

const RABBITMQCTL = process.env.RABBITMQCTL ?? "rabbitmqctl";

async function rabbitmqctl(...args: string[]): Promise<string> {
  const { stdout } = await run(RABBITMQCTL, ["--quiet", ...args], { timeout: 30_000 });
  return stdout;
}

/**
 * Creates a vhost named t_<METER_TEST_RUN or local>_<random> with full permissions for the broker user
 * in RABBITMQ_URL (default amqp://guest:guest@127.0.0.1:5672). Needs rabbitmqctl on the same machine.
 */
export async function createTestVhost(): Promise<TestVhost> {
  const base = new URL(process.env.RABBITMQ_URL ?? "amqp://guest:guest@127.0.0.1:5672");
  const user = decodeURIComponent(base.username || "guest");
  const name = `t_${process.env.METER_TEST_RUN ?? "local"}_${randomBytes(6).toString("hex")}`;
  const url = new URL(base.href);
  url.pathname = `/${encodeURIComponent(name)}`;

  const allowAccess = async (): Promise<void> => {
    await rabbitmqctl("set_permissions", "-p", name, user, ".*", ".*", ".*");
  };
  await rabbitmqctl("add_vhost", name);
  await allowAccess();
  let users: Record<BusDeployable, string> | undefined;
  let passwords: Record<BusDeployable, string> | undefined;
  const ensureUsers = async (rightsOf?: (deployable: BusDeployable) => BrokerRights): Promise<Record<BusDeployable, string>> => {
    passwords ??= Object.fromEntries(BUS_DEPLOYABLES.map((d) => [d, randomBytes(12).toString("hex")])) as Record<BusDeployable, string>;
    // Users belong to the broker, not the vhost: named after the vhost, so parallel runs never share one.
    users = await ensureBrokerUsers({
      vhost: name,
      passwords,
      userName: (d) => `${name}.${d}`,
      rabbitmqctl: RABBITMQCTL,
      ...(rightsOf ? { rightsOf } : {}),
    });
    return users;
  };

  return {
    name,
    url: url.href,
    async closeConnections() {
      await rabbitmqctl("close_all_connections", "--vhost", name, "--limit", "1000", "closed by a test");
    },
    async denyAccess() {
      await rabbitmqctl("clear_permissions", "-p", name, user);
    },
    allowAccess,
    async deployableUrls(rightsOf) {
      const made = await ensureUsers(rightsOf);
      return Object.fromEntries(BUS_DEPLOYABLES.map((d) => [d, brokerUrlOf(url.href, made[d], passwords![d])])) as Record<BusDeployable, string>;
    },
    async grantRights(rightsOf) {
      await ensureUsers(rightsOf);
    },
    async drop() {
      await rabbitmqctl("delete_vhost", name);
      if (users) await deleteBrokerUsers(Object.values(users), RABBITMQCTL);
    },
  };
}

/** A message put on the broker by hand, around the bus: what anyone holding broker credentials can send. */
export interface HandMadeMessage {
  /** "meter" (the default) or "" with a queue name as the routing key, to put it straight on a queue. */
  exchange?: string;
  routingKey: string;
  content: string;
  messageId: string;
  headers?: Record<string, unknown>;
}

/** Publishes one message with its own connection and waits for the broker's confirm. */
export async function publishByHand(url: string, message: HandMadeMessage): Promise<void> {
  const connection = await connect(url);
  try {
    const channel = await connection.createConfirmChannel();
    channel.publish(message.exchange ?? "meter", message.routingKey, Buffer.from(message.content), {
      persistent: true,
      contentType: "application/json",
      messageId: message.messageId,
      headers: message.headers ?? {},
    });
    await channel.waitForConfirms();
  } finally {
    await connection.close();
  }
}

/**
 * How many messages wait in each of `queues` (a passive declare on the queue itself). Unlike the counts
 * rabbitmqctl prints, which for a quorum queue are statistics emitted every few seconds, it is exact at once.
 */
export async function readyMessages(url: string, queues: readonly string[]): Promise<Record<string, number>> {
  const connection = await connect(url);
  try {
    const out: Record<string, number> = {};
    for (const queue of queues) {
      const channel = await connection.createChannel();
      out[queue] = (await channel.checkQueue(queue)).messageCount;
      await channel.close();
    }
    return out;
  } finally {
    await connection.close();
  }
}

/** Takes every message now waiting on a queue (a dead-letter queue, say) off it; resolves with their ids and headers. */
export async function drainQueue(url: string, queue: string): Promise<{ messageId: string; headers: Record<string, unknown> }[]> {
  const connection = await connect(url);
  try {
    const channel = await connection.createChannel();
    const taken: { messageId: string; headers: Record<string, unknown> }[] = [];
    for (;;) {
      const message = await channel.get(queue, { noAck: true });
      if (message === false) return taken;
      taken.push({ messageId: String(message.properties.messageId), headers: { ...message.properties.headers } });
    }
  } finally {
    await connection.close();
  }
}
