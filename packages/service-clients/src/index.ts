export * from "./billing-client";
export * from "./catalog-cache";
export * from "./files-client";
export * from "./hold-audit";
export * from "./hold-placement";
export * from "./final-holds";
export * from "./restore-point";
