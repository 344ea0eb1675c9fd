/** Fails early with a plain message instead of a bind or connect error naming something else. */
export function assertPort(port: number, what: string): void {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`${what}: port must be an integer from 1 to 65535, got ${port}`);
}
