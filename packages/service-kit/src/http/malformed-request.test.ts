import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { closeServer, listen } from "../lifecycle";
import { answerMalformedRequests } from "./malformed-request";

let server: Server;
let port: number;
beforeAll(async () => {
  server = createServer((_req, res) => res.end("ok"));
  answerMalformedRequests(server);
  port = await listen(server, 0, "127.0.0.1");
});
afterAll(() => closeServer(server));

function exchange(head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(head));
    let data = "";
    socket.on("data", (c: Buffer) => (data += c.toString("latin1")));
    socket.on("end", () => resolve(data));
    socket.on("error", reject);
  });
}

describe("a request Node's HTTP parser refuses", () => {
  it("is 400 with the API's error body and a request id, not a bare status line", async () => {
    // A DEL in a header value (a client's Idempotency-Key, say): no HTTP client library sends it.
    const answer = await exchange("POST /v1/messages HTTP/1.1\r\nHost: x\r\nIdempotency-Key: ab\x7fcd\r\nContent-Length: 0\r\n\r\n");
    const [head, body] = answer.split("\r\n\r\n");
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    const id = /x-request-id: (req_[0-9a-f]{32})/.exec(head!)?.[1];
    expect(id).toBeDefined();
    expect(JSON.parse(body!)).toEqual({
      type: "error",
      error: { code: "invalid_request", message: expect.stringContaining("not valid HTTP"), type: "invalid_request_error", request_id: id },
    });
  });

  it("leaves well-formed requests alone", async () => {
    const answer = await exchange("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    expect(answer).toMatch(/^HTTP\/1\.1 200 [\s\S]*ok$/);
  });
});
