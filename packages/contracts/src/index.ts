export * from "./errors";
export * from "./money";
export * from "./scopes";
export * from "./identity";
export * from "./headers";
export * from "./catalog";
export * from "./billing";
export * from "./messages";
