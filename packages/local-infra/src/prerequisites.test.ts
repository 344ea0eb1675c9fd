import { ensurePrerequisites } from "./prerequisites";

// PostgreSQL and RabbitMQ run on this machine (the test runner made sure); Redis is asked for by address.
const running = { postgres: { host: "127.0.0.1", port: 5432 }, rabbitmq: { host: "127.0.0.1", port: 5672 } };
// TEST-NET-1 (RFC 5737): nothing answers there, and not being this host, nothing is started for it.
const nowhere = { host: "192.0.2.1", port: 6379 };

describe("ensurePrerequisites", () => {
  it("does not ask for Redis unless told to (npm start with the rate limit off)", async () => {
    await expect(ensurePrerequisites({ ...running, log: () => undefined })).resolves.toBeUndefined();
  });

  it("requires Redis when told to (the rate limit on), naming it", async () => {
    await expect(ensurePrerequisites({ ...running, redis: nowhere, log: () => undefined })).rejects.toThrow("Redis is not reachable on 192.0.2.1:6379");
  });
});
