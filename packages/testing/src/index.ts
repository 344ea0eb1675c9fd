export * from "./database";
export * from "./rabbitmq";
export * from "./fake-upstream";
