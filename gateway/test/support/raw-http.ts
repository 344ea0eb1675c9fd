import { connect, type Socket } from "node:net";

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Milliseconds from the connection to the end of the answer. */
  afterMs: number;
}

/**
 * One HTTP/1.1 exchange on a raw TCP connection, so the test controls every byte of the request: the
 * head is written at once, then `sendBody` writes the body however it likes (in chunks, a byte at a
 * time) until the answer arrives or the connection ends. Resolves with the answer, or rejects with
 * what ended the connection without one.
 */
export function rawExchange(
  url: string,
  head: { method: string; path: string; headers: Record<string, string | number> },
  sendBody: (socket: Socket, answered: () => boolean) => Promise<void> | void,
): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = Buffer.alloc(0);
    let answer: RawAnswer | undefined;
    const answered = () => answer !== undefined;
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      answer ??= parseAnswer(received, started);
      if (answer) {
        resolve(answer);
        socket.destroy();
      }
    });
    socket.on("error", (err) => {
      if (!answer) reject(err);
    });
    socket.on("close", () => {
      if (!answer) reject(new Error(`the connection closed without an answer after ${Date.now() - started} ms: ${received.toString("latin1")}`));
    });
    socket.on("connect", () => {
      const lines = [`${head.method} ${head.path} HTTP/1.1`, `host: ${hostname}:${port}`, ...Object.entries(head.headers).map(([k, v]) => `${k}: ${v}`)];
      socket.write(`${lines.join("\r\n")}\r\n\r\n`);
      Promise.resolve(sendBody(socket, answered)).catch((err: unknown) => {
        if (!answer) reject(err instanceof Error ? err : new Error(String(err)));
      });
    });
  });
}

export interface WholeBodyOutcome {
  /** The answer it read, or the error that ended the connection before it could (EPIPE, ECONNRESET). */
  outcome: { status: number; code: string | undefined } | string;
  /** Body bytes the connection took before it ended or the body was done. */
  sent: number;
  ms: number;
}

/**
 * A client that sends its whole body before it reads a byte of the answer, as many do (curl, Python's
 * requests): `total` bytes, declared (`content-length`) or chunked, written as fast as the connection
 * takes them; only then is the answer read. Its socket reads nothing meanwhile, so an answer the
 * server sent is in the kernel's buffer, where a reset of the connection throws it away.
 */
export function sendWholeThenRead(
  url: string,
  head: { path: string; headers: Record<string, string | number> },
  total: number,
  opts: { chunked?: boolean } = {},
): Promise<WholeBodyOutcome> {
  const { hostname, port } = new URL(url);
  const started = Date.now();
  const piece = Buffer.alloc(256 * 1024, "x");
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.pause();
    let sent = 0;
    let failed: string | undefined;
    const done = (outcome: WholeBodyOutcome["outcome"]) => resolve({ outcome, sent, ms: Date.now() - started });
    socket.on("error", (err: NodeJS.ErrnoException) => {
      failed ??= err.code ?? err.message;
    });
    socket.on("close", () => {
      if (failed !== undefined) done(failed);
    });
    const write = (data: Buffer | string, counts: number): Promise<void> =>
      new Promise((ok) => {
        const flushed = socket.write(data, () => {
          sent += counts;
          if (flushed) ok();
        });
        if (!flushed) socket.once("drain", () => ok());
      });
    socket.on("connect", () => {
      void (async () => {
        const framing = opts.chunked ? { "transfer-encoding": "chunked" } : { "content-length": total };
        const lines = [
          `POST ${head.path} HTTP/1.1`,
          `host: ${hostname}:${port}`,
          ...Object.entries({ ...head.headers, ...framing }).map(([k, v]) => `${k}: ${v}`),
        ];
        await write(`${lines.join("\r\n")}\r\n\r\n`, 0);
        for (let left = total; left > 0 && failed === undefined && !socket.destroyed;) {
          const part = left >= piece.length ? piece : piece.subarray(0, left);
          left -= part.length;
          if (opts.chunked) await write(`${part.length.toString(16)}\r\n`, 0);
          await write(part, part.length);
          if (opts.chunked) await write("\r\n", 0);
        }
        if (opts.chunked && failed === undefined) await write("0\r\n\r\n", 0);
        if (failed !== undefined || socket.destroyed) return;
        let received = Buffer.alloc(0);
        socket.on("data", (chunk: Buffer) => {
          received = Buffer.concat([received, chunk]);
          const answer = parseAnswer(received, started);
          if (answer) {
            socket.destroy();
            done(outcomeOf(answer));
          }
        });
        socket.on("end", () => {
          if (!parseAnswer(received, started)) done(`the connection ended without an answer: ${received.toString("latin1").slice(0, 200)}`);
        });
        socket.resume();
      })();
    });
  });
}

/** Writes `body` as a chunked request body, in `parts` chunks a few milliseconds apart. */
export async function writeChunked(socket: Socket, body: Buffer, parts = 3): Promise<void> {
  const size = Math.ceil(body.length / parts);
  for (let at = 0; at < body.length; at += size) {
    const piece = body.subarray(at, at + size);
    socket.write(`${piece.length.toString(16)}\r\n`);
    socket.write(piece);
    socket.write("\r\n");
    await sleep(20);
  }
  socket.write("0\r\n\r\n");
}

/** Writes `total` bytes of `fill`, `step` bytes every `everyMs`, until done, answered or cut. */
export async function drip(socket: Socket, answered: () => boolean, total: number, step: number, everyMs: number, fill = "x"): Promise<void> {
  for (let sent = 0; sent < total && !answered() && !socket.destroyed; sent += step) {
    socket.write(Buffer.alloc(Math.min(step, total - sent), fill));
    await sleep(everyMs);
  }
}

/** An answer's status and error code (undefined when the body is not an error). */
export function outcomeOf(answer: RawAnswer): { status: number; code: string | undefined } {
  const body = answer.body ? (JSON.parse(answer.body) as { error?: { code: string } }) : {};
  return { status: answer.status, code: body.error?.code };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function parseAnswer(received: Buffer, started: number): RawAnswer | undefined {
  const end = received.indexOf("\r\n\r\n");
  if (end < 0) return undefined;
  const [statusLine = "", ...headerLines] = received.subarray(0, end).toString("latin1").split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const status = Number(statusLine.split(" ")[1]);
  if (status === 100) return parseAnswer(received.subarray(end + 4), started);
  const rest = received.subarray(end + 4);
  let body: Buffer | undefined;
  if (headers["transfer-encoding"] === "chunked") body = dechunk(rest);
  else if (headers["content-length"] !== undefined) {
    const length = Number(headers["content-length"]);
    body = rest.length >= length ? rest.subarray(0, length) : undefined;
  } else body = rest;
  return body ? { status, headers, body: body.toString("utf8"), afterMs: Date.now() - started } : undefined;
}

function dechunk(data: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf("\r\n", at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(data.subarray(at, lineEnd).toString("latin1"), 16);
    if (size === 0) return Buffer.concat(parts);
    if (data.length < lineEnd + 2 + size + 2) return undefined;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
