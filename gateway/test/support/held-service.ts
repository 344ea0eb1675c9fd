import { createServer, type Server } from "node:http";
import { closeServer, listen } from "@meter/service-kit";
import { retryWhileAddressInUse, withAssignedPorts } from "@meter/testing";

/**
 * A text service stand-in that holds every request until the test opens the gate, so the burst is
 * really concurrent at the gateway: nothing is answered before every request has been either
 * admitted (and is waiting here) or refused by the gateway.
 */
export class HeldService {
  readonly arrived: { release: () => void }[] = [];
  private gateOpen = false;
  private server: Server | undefined;
  port = 0;

  /**
   * On a port of its own, or (a restart) on the one it had, retried while that one is taken. Not port 0:
   * a port the kernel hands out (32768-60999 here) may go to another test's server while this one is
   * stopped, and the gateway would then reach that server (docs/architecture.md, "Tests", Ports).
   */
  async start(port?: number): Promise<void> {
    this.server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        const release = () => {
          res.setHeader("content-type", "application/json");
          res.end(JSON.stringify({ type: "message", content: [] }));
        };
        if (this.gateOpen) release();
        else this.arrived.push({ release });
      });
    });
    const server = this.server;
    this.port =
      port === undefined
        ? await withAssignedPorts(1, ([p]) => listen(server, p!, "127.0.0.1"))
        : await retryWhileAddressInUse(() => listen(server, port, "127.0.0.1"));
  }

  open(): void {
    this.gateOpen = true;
    for (const held of this.arrived.splice(0)) held.release();
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await closeServer(this.server);
    this.server = undefined;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
}
