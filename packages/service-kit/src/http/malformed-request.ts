import { randomUUID } from "node:crypto";
import type { Server } from "node:http";
import type { Duplex } from "node:stream";
import { AnthropicRequestIdHeader, RequestIdHeader } from "@meter/contracts";
import { errorBody } from "../app-error";

/**
 * A request Node's HTTP parser refuses (a control character in a header value, a malformed request
 * line) never reaches Express: Node answers a bare `400 Bad Request` with no body. The contract says
 * every error carries the API's error body and a request id, so such a request gets them too.
 */
export function answerMalformedRequests(server: Server): void {
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Duplex) => {
    // An answer already under way on this connection cannot be followed by another one.
    const answering = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (err.code === "ECONNRESET" || !socket.writable || answering) {
      socket.destroy();
      return;
    }
    // Headers over Node's limit keep Node's own answer (431 has no code in the contract's catalog).
    if (err.code === "HPE_HEADER_OVERFLOW") {
      socket.end("HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\n\r\n");
      return;
    }
    const [status, reason, code, message] =
      err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "Request Timeout", "request_timeout", "the request did not arrive in time; nothing was reserved"]
        : [400, "Bad Request", "invalid_request", "the request is not valid HTTP (a header or the request line has a character HTTP does not allow)"];
    const requestId = `req_${randomUUID().replace(/-/g, "")}`;
    const body = JSON.stringify(errorBody(code, message, status, requestId));
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
        `${RequestIdHeader}: ${requestId}\r\n${AnthropicRequestIdHeader}: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
}
