export * from "./database";
export * from "./rabbitmq";
export * from "./fake-upstream";
export * from "./system-under-test";
