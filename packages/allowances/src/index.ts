export * from "./allocator";
export * from "./allowance-store";
export * from "./sizing";
export * from "./spend-rate";
