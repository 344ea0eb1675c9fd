import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { BUS_DEPLOYABLES, BusExchanges, brokerRights, brokerUserName, type BrokerRights, type BusDeployable } from "@meter/contracts";

export interface BrokerUsersOptions {
  /** The vhost the users get their rights on ("/" for the broker's default). */
  vhost: string;
  /** Each deployable's password; a user that exists gets it again. */
  passwords: Record<BusDeployable, string>;
  /** The user names (default `meter-<deployable>`); tests name them after their vhost, since users are per broker. */
  userName?: (deployable: BusDeployable) => string;
  /** RABBITMQCTL, or rabbitmqctl on the PATH. */
  rabbitmqctl?: string;
  /** Each deployable's rights (default contracts' brokerRights: this release's); a test of an upgrade gives the previous release's. */
  rightsOf?: (deployable: BusDeployable) => BrokerRights;
}

/**
 * One broker user per deployable with exactly its rights (contracts' brokerRights): the permissions on
 * the vhost and the topic permissions on `meter`. Idempotent: run at every start. One `rabbitmqctl
 * import_definitions` for all (each rabbitmqctl call starts an Erlang VM); passwords go in it hashed as
 * the broker stores them, on its standard input, never on a command line.
 */
export async function ensureBrokerUsers(opts: BrokerUsersOptions): Promise<Record<BusDeployable, string>> {
  const ctl = opts.rabbitmqctl ?? process.env.RABBITMQCTL ?? "rabbitmqctl";
  const nameOf = opts.userName ?? brokerUserName;
  const names = Object.fromEntries(BUS_DEPLOYABLES.map((d) => [d, nameOf(d)])) as Record<BusDeployable, string>;
  const definitions = brokerUserDefinitions(opts.vhost, names, opts.passwords, opts.rightsOf);
  await run(ctl, ["--quiet", "import_definitions", "--format", "json"], JSON.stringify(definitions));
  return names;
}

/** The users, permissions and topic permissions in RabbitMQ's definitions format. */
export function brokerUserDefinitions(
  vhost: string,
  names: Record<BusDeployable, string>,
  passwords: Record<BusDeployable, string>,
  rightsOf: (deployable: BusDeployable) => BrokerRights = brokerRights,
) {
  return {
    users: BUS_DEPLOYABLES.map((d) => ({
      name: names[d],
      password_hash: passwordHash(passwords[d]),
      hashing_algorithm: "rabbit_password_hashing_sha256",
      tags: [],
    })),
    permissions: BUS_DEPLOYABLES.map((d) => {
      const r = rightsOf(d);
      return { user: names[d], vhost, configure: r.configure, write: r.write, read: r.read };
    }),
    topic_permissions: BUS_DEPLOYABLES.map((d) => {
      const r = rightsOf(d);
      return { user: names[d], vhost, exchange: BusExchanges.main, write: r.topicWrite, read: r.topicRead };
    }),
  };
}

/** RabbitMQ's rabbit_password_hashing_sha256: base64(salt ++ sha256(salt ++ password)), a 4-byte salt. */
export function passwordHash(password: string): string {
  const salt = randomBytes(4);
  return Buffer.concat([
    salt,
    createHash("sha256")
      .update(Buffer.concat([salt, Buffer.from(password, "utf8")]))
      .digest(),
  ]).toString("base64");
}

/** Deletes the users ensureBrokerUsers made (a test vhost's, when it is dropped). */
export async function deleteBrokerUsers(names: readonly string[], rabbitmqctl?: string): Promise<void> {
  const ctl = rabbitmqctl ?? process.env.RABBITMQCTL ?? "rabbitmqctl";
  await Promise.all(names.map((user) => run(ctl, ["--quiet", "delete_user", user]).catch(() => undefined)));
}

/** The broker URL of one user: the admin URL's host, port and vhost with the user's name and password. */
export function brokerUrlOf(adminUrl: string, user: string, password: string): string {
  const url = new URL(adminUrl);
  url.username = encodeURIComponent(user);
  url.password = encodeURIComponent(password);
  return url.href;
}

/** The vhost an amqp URL names ("/" when it names none). */
export function vhostOf(url: string): string {
  const path = new URL(url).pathname;
  return path === "" || path === "/" ? "/" : decodeURIComponent(path.slice(1));
}

function run(cmd: string, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"], timeout: 30_000 });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.slice(0, 3).join(" ")} failed (${code}): ${err.trim()}`))));
    child.stdin.end(input ?? "");
  });
}
