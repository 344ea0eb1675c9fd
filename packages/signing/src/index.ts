export * from "./internal-keys";
export * from "./sha256";
