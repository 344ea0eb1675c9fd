import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { RequestHandler } from "express";

export interface LingerBounds {
  /** Request bytes read and thrown away after the answer before the connection is cut. */
  maxBytes: number;
  /** Time after the answer before the connection is cut, whatever is still coming. */
  maxMs: number;
}

const MiB = 1024 * 1024;
/**
 * Enough for a client that overshot a body limit by as much as the largest body the API documents (a
 * 50 MiB file, MAX_FILE_BYTES) to finish and read its 413: the 10 MiB of the largest JSON limit and
 * those 50 MiB fit in 64 MiB, which a client sends in well under 30 s. Past either bound the connection
 * is cut: nobody makes the gateway read a gigabyte it already refused.
 */
export const DEFAULT_LINGER: LingerBounds = { maxBytes: 64 * MiB, maxMs: 30_000 };

/**
 * nginx's lingering close, for answers given before the request body was read: a 413 on the declared
 * length, a refused key, a request shed under load. The client is often still sending. Closing the
 * connection then (Node does, right after the answer, when the client asked for `Connection: close`)
 * makes the kernel reset it while the client's bytes keep arriving, and a reset can throw away the answer
 * before the client reads it: the client sees EPIPE or ECONNRESET instead of the 413. So after such an
 * answer the rest of the body is read and thrown away, and the connection closes only once the client
 * has finished sending, or after `maxBytes` more bytes or `maxMs`, whichever comes first. Such an
 * answer always says `Connection: close`: the connection is spent on draining, never handed to the
 * client's next request (which the drain's bounds would then cut).
 */
export function lingeringClose(bounds: LingerBounds = DEFAULT_LINGER): RequestHandler {
  return (req, res, next) => {
    const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => typeof res;
    res.writeHead = ((...args: unknown[]) => {
      if (!req.complete && !res.headersSent) res.setHeader("connection", "close");
      return writeHead(...args);
    }) as typeof res.writeHead;
    // Prepended, so it runs before Node's own 'finish' handling decides the connection's fate.
    res.prependOnceListener("finish", () => {
      if (!req.complete) drainRest(req, bounds);
    });
    next();
  };
}

function drainRest(req: IncomingMessage, { maxBytes, maxMs }: LingerBounds): void {
  const socket = req.socket;
  const start = socket.bytesRead;
  const cut = (): void => {
    socket.destroy();
  };
  // Read through the request, so the HTTP parser keeps reading the socket (a 'data' listener on the
  // socket itself would take it from the parser, and a body refused unread would then never flow
  // again); measured on the socket, framing included.
  const count = (): void => {
    if (socket.bytesRead - start > maxBytes) cut();
  };
  const timer = setTimeout(cut, maxMs);
  const done = (): void => {
    clearTimeout(timer);
    req.off("data", count);
  };
  req.on("data", count);
  req.once("end", done);
  socket.once("close", done);
  req.resume();
  lingerBeforeClosing(socket, req);
}

/**
 * Node ends a connection whose last answer this was with `socket.destroySoon()`: it closes the socket
 * as soon as the answer is written. Here the socket is half-closed instead (the answer and a FIN go out)
 * and closed for good once the request body has all arrived; the bounds in drainRest cut it otherwise.
 */
function lingerBeforeClosing(socket: Socket, req: IncomingMessage): void {
  const closeSoon = socket.destroySoon.bind(socket);
  socket.destroySoon = () => {
    Reflect.deleteProperty(socket, "destroySoon");
    socket.end();
    if (req.complete) closeSoon();
    else req.once("end", closeSoon);
  };
}
