export * from "./internal-keys";
export * from "./sha256";
export * from "./pair-keys";
export * from "./grant-keys";
