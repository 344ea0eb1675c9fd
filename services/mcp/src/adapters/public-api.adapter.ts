import { Agent, request } from "undici";
import { IdempotencyKeyHeader } from "@meter/contracts";
import { deliveryOf, trackSending } from "@meter/service-kit";
import { ApiUnreachable, type ApiRequest, type ApiResponse, type PublicApi } from "../domain/public-api";
import type { Caller } from "../domain/tool-call";

/**
 * The public API through the gateway, as the caller: their own `Authorization`, so the gateway checks
 * the key's scopes, and text and media place holds against its budget and apply idempotency exactly as
 * for any HTTP client. MCP never signs these calls itself.
 */
export class GatewayPublicApi implements PublicApi {
  private readonly agent: Agent;
  private readonly origin: string;

  constructor(
    gatewayUrl: string,
    private readonly timeoutMs: number,
  ) {
    this.origin = new URL(gatewayUrl).origin;
    this.agent = new Agent({ keepAliveTimeout: 30_000, connect: { timeout: 5_000 } });
  }

  async call(caller: Caller, req: ApiRequest): Promise<ApiResponse> {
    const payload = req.body === undefined ? undefined : JSON.stringify(req.body);
    const headers: Record<string, string> = {
      authorization: caller.authorization,
      accept: "application/json",
      ...(payload !== undefined ? { "content-type": "application/json" } : {}),
      ...(req.idempotencyKey !== undefined ? { [IdempotencyKeyHeader]: req.idempotencyKey } : {}),
    };
    let sent = false;
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(this.origin + req.path, {
        method: req.method,
        headers,
        body: payload,
        dispatcher: trackSending(this.agent, () => (sent = true)),
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
    } catch (e) {
      throw new ApiUnreachable(`${req.method} ${req.path} failed: ${(e as Error).message}`, deliveryOf(e, sent), { cause: e });
    }
    const retryAfter = Number(single(res.headers["retry-after"]));
    const retryAfterS = Number.isInteger(retryAfter) && retryAfter >= 0 ? retryAfter : undefined;
    let body: unknown;
    try {
      body = req.rawUpTo !== undefined ? await readUpTo(res.body, req.rawUpTo) : parseJson(await res.body.text());
    } catch (e) {
      throw new ApiUnreachable(`${req.method} ${req.path}: reading the answer failed`, "unknown", { cause: e });
    }
    return { status: res.statusCode, body, retryAfterS };
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** The body as text, or undefined when it is longer than `max` bytes (the rest is not read). */
async function readUpTo(body: AsyncIterable<Buffer> & { destroy(): unknown }, max: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > max) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function parseJson(text: string): unknown {
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
