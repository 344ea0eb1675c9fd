export * from "./billing-client";
export * from "./catalog-cache";
export * from "./files-client";
export * from "./restore-point";
