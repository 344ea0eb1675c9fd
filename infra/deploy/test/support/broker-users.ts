import { BUS_DEPLOYABLES, brokerUserName, type BusDeployable, type Deployable } from "@meter/contracts";
import { brokerPasswordVariable } from "../../broker-users";

/**
 * A process's RABBITMQ_URL logs in as its own deployable's broker user (`meter-<deployable>`, made by
 * broker-users.sh with only that deployable's rights) with the password the broker's setup gives that
 * user (`<DEPLOYABLE>_BROKER_PASSWORD` in the broker's environment); never as the administrator.
 */
export function checkBrokerUser(where: string, deployable: Deployable, value: string | undefined, broker: Record<string, string>): string[] {
  if (!value || !URL.canParse(value) || new URL(value).hostname !== "rabbitmq") return [];
  if (!(BUS_DEPLOYABLES as readonly string[]).includes(deployable)) return [`${where}: gets RABBITMQ_URL, but ${deployable} uses no bus`];
  const url = new URL(value);
  const own = deployable as BusDeployable;
  const user = decodeURIComponent(url.username);
  if (user === broker.RABBITMQ_DEFAULT_USER) return [`${where}: RABBITMQ_URL logs in as the broker's administrator; it needs its own user`];
  if (user !== brokerUserName(own)) return [`${where}: RABBITMQ_URL logs in as ${user}, not its own ${brokerUserName(own)}`];
  if (decodeURIComponent(url.password) !== broker[brokerPasswordVariable(own)]) {
    return [`${where}: RABBITMQ_URL logs in with another password than the broker gives ${user} (${brokerPasswordVariable(own)})`];
  }
  return [];
}
