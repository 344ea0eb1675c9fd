import { createServer } from "node:net";

/** Fails early with a plain message instead of a bind or connect error naming something else. */
export function assertPort(port: number, what: string): void {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`${what}: port must be an integer from 1 to 65535, got ${port}`);
}

/** A port nothing listens on right now (the OS's pick), for a server the caller starts next. */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, host, () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
