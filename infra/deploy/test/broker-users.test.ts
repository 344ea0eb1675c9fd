import { brokerUsersResources, brokerUsersScript, BROKER_USERS_RESOURCES, BROKER_USERS_SCRIPT } from "../broker-users";
import { readText } from "./support/repo";

/** The broker's user setup, run by compose's and the test cluster's RabbitMQ, is the one the rights in code make. */
it("k8s/dev-dependencies/rabbitmq/broker-users.sh is what `pnpm broker-users` writes from contracts' brokerRights", () => {
  expect(readText(BROKER_USERS_SCRIPT)).toBe(brokerUsersScript());
});

/** So are the prod-ha overlay's users on its RabbitmqCluster (Messaging Topology Operator resources). */
it("k8s/overlays/prod-ha/broker-users.yaml is what `pnpm broker-users` writes from contracts' brokerRights", () => {
  expect(readText(BROKER_USERS_RESOURCES)).toBe(brokerUsersResources());
});
