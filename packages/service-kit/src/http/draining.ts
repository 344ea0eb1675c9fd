import type { Server } from "node:http";

/**
 * Whether this process is shutting down. One state for the whole process: SIGTERM is sent to the
 * process, and every server in it (the gateway has two ports) must stop looking ready at once, so the
 * load balancer stops sending new connections while the requests already here finish.
 */
let draining = false;

export function startDraining(): void {
  draining = true;
}

export const isDraining = (): boolean => draining;

/**
 * While draining, every answer closes its connection (`Connection: close`). A caller's keep-alive
 * connection was made before the balancer took this process out, and would otherwise be reused until
 * the server closes it, racing the caller's next request on it. A socket retired by its own answer
 * cannot race: the caller opens a new connection, which goes to a process that is still in service.
 */
export function closeConnectionsWhileDraining(server: Server): void {
  server.prependListener("request", (_req, res) => {
    if (draining) res.shouldKeepAlive = false;
  });
}
