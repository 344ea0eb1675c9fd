import { createServer, type Server } from "node:http";
import { closeServer, listen } from "@meter/service-kit";
import { retryWhileAddressInUse } from "@meter/testing";

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

  /** On any port, or (a restart) on the one it had, retried while that one is taken. */
  async start(port = 0): Promise<void> {
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
    this.port = await retryWhileAddressInUse(() => listen(server, port, "127.0.0.1"));
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
