import type { Delivery } from "@meter/service-kit";
import type { Caller } from "./tool-call";

export interface ApiRequest {
  method: "GET" | "POST";
  /** Path and query, e.g. `/v1/jobs/<id>`. */
  path: string;
  body?: unknown;
  idempotencyKey?: string;
  /** Return the body as text, whatever its type (file content), reading at most this many bytes. */
  rawUpTo?: number;
}

export interface ApiResponse {
  status: number;
  /** Parsed JSON, or the text of a raw read (undefined when a raw read went over its limit). */
  body: unknown;
  retryAfterS: number | undefined;
}

/** The public API, called through the gateway with the caller's own credential. */
export interface PublicApi {
  call(caller: Caller, request: ApiRequest): Promise<ApiResponse>;
  close(): Promise<void>;
}

/** No answer: the request certainly did not arrive, or may have (its outcome unknown). */
export class ApiUnreachable extends Error {
  constructor(
    message: string,
    readonly delivery: Delivery,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "ApiUnreachable";
  }
}
