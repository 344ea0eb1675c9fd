import type { McpFullResult } from "@meter/contracts";
import type { Logger } from "@meter/service-kit";
import type { ResultStore } from "../domain/stored-result";
import type { Caller, ToolResult } from "../domain/tool-call";
import { ToolFailure, ToolFailures } from "../errors";
import type { CallLimiter, CallSlot } from "./call-limiter";
import { missingScopes } from "./tool-access";
import { failureResult, oversizedResult, responseSize, successResult, type ResponseFrame } from "./tool-result";
import type { Tool } from "./tools/tool";

export interface ToolInvokerDeps {
  limiter: CallLimiter;
  results: ResultStore;
  /** Over this, the JSON-RPC response as sent, a result is stored and linked instead (docs/mcp.md "Sizes"). */
  resultLimitBytes: number;
  logger: Logger;
}

/** Where a stored result is downloaded, through the gateway, with the same key. */
export function fullResultPath(id: string): string {
  return `/v1/mcp/results/${encodeURIComponent(id)}`;
}

/**
 * One tool call, the same for both protocol eras: the key's rights, the arguments, a slot under both
 * concurrency limits (released in `finally`, whatever happens), the tool itself, and the size of the
 * response that will carry its result. Every failure becomes a result with `isError: true` that names
 * its code, so the model can act on it.
 */
export class ToolInvoker {
  constructor(private readonly deps: ToolInvokerDeps) {}

  async invoke(tool: Tool, rawArgs: unknown, caller: Caller, frame: ResponseFrame): Promise<ToolResult> {
    const missing = missingScopes(caller.identity.scopes, tool.name);
    if (missing.length > 0) return failureResult(ToolFailures.insufficientScope(tool.name, missing));
    const args = tool.input.safeParse(rawArgs ?? {});
    if (!args.success) return failureResult(ToolFailures.invalidArguments(tool.name, args.error));

    let slot: CallSlot;
    try {
      slot = await this.deps.limiter.acquire(caller.identity.organization_id, tool.name);
    } catch (e) {
      if (e instanceof ToolFailure) return failureResult(e);
      throw e;
    }
    try {
      let result: ToolResult;
      let summary: string;
      try {
        const outcome = await tool.run(args.data, caller);
        result = successResult(outcome);
        summary = outcome.summary;
      } catch (e) {
        if (!(e instanceof ToolFailure)) throw e;
        result = failureResult(e);
        summary = `${tool.name} failed with ${e.error.code}`;
      }
      return await this.fit(tool, result, summary, caller, frame);
    } catch (e) {
      this.deps.logger.error({ err: e, tool: tool.name, requestId: caller.requestId }, "tool call failed");
      return failureResult(ToolFailures.internal(caller.requestId));
    } finally {
      await slot.release();
    }
  }

  /**
   * The result as it is, when its response fits the limit; otherwise the whole structured result is
   * stored for this key and the response carries a link to it and a preview. Measured once, on the
   * response as the era serializes it.
   */
  private async fit(tool: Tool, result: ToolResult, summary: string, caller: Caller, frame: ResponseFrame): Promise<ToolResult> {
    const limit = this.deps.resultLimitBytes;
    const size = responseSize(frame, result);
    if (size <= limit) return result;
    const content = JSON.stringify(result.structuredContent);
    const key = result.structuredContent.idempotency_key;
    let id: string;
    try {
      id = await this.deps.results.save({
        owner: { keyId: caller.identity.key_id, organizationId: caller.identity.organization_id },
        tool: tool.name,
        idempotencyKey: typeof key === "string" ? key : undefined,
        content,
      });
    } catch (e) {
      this.deps.logger.warn({ err: e, tool: tool.name, requestId: caller.requestId }, "could not store an oversized tool result");
      const kept = typeof key === "string" ? { idempotency_key: key, status: result.structuredContent.status } : {};
      return failureResult(ToolFailures.resultNotStored(size, limit).with(kept));
    }
    const full: McpFullResult = {
      result_id: id,
      mime_type: "application/json",
      size_bytes: Buffer.byteLength(content, "utf8"),
      content_url: caller.publicBaseUrl + fullResultPath(id),
    };
    return oversizedResult(result, full, summary, frame, limit);
  }
}
