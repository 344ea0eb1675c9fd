import { randomUUID } from "node:crypto";
import { ApiUnreachable, type ApiRequest, type ApiResponse, type PublicApi } from "../../domain/public-api";
import type { Caller } from "../../domain/tool-call";
import { ToolFailures } from "../../errors";

/** A read of the public API: its body on success, its refusal as the tool's failure. */
export async function readApi(api: PublicApi, caller: Caller, req: ApiRequest): Promise<unknown> {
  let res: ApiResponse;
  try {
    res = await api.call(caller, req);
  } catch (e) {
    if (e instanceof ApiUnreachable) throw ToolFailures.unavailable("the API");
    throw e;
  }
  if (res.status >= 400) throw ToolFailures.fromApi(res);
  return res.body;
}

/**
 * A paid request: the answer, or `unknown` when it may have arrived but its answer was lost. Money may
 * be reserved then, so that is never a failure: the caller repeats it with the same idempotency key.
 */
export async function sendPaid(api: PublicApi, caller: Caller, req: ApiRequest & { idempotencyKey: string }): Promise<ApiResponse | "unknown"> {
  try {
    return await api.call(caller, req);
  } catch (e) {
    if (!(e instanceof ApiUnreachable)) throw e;
    if (e.delivery === "unknown") return "unknown";
    throw ToolFailures.unavailable("the API").with({ idempotency_key: req.idempotencyKey });
  }
}

/** The key of a paid call that came without one; returned in the result so the agent can repeat the call. */
export function newIdempotencyKey(): string {
  return `mcp-${randomUUID()}`;
}
