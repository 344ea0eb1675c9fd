import type { Logger } from "@meter/service-kit";
import type { Caller, ToolResult } from "../domain/tool-call";
import { ToolFailure, ToolFailures } from "../errors";
import type { CallLimiter, CallSlot } from "./call-limiter";
import { missingScopes } from "./tool-access";
import type { ToolCatalog } from "./tool-catalog";
import { failureResult, fitResult, successResult } from "./tool-result";

/**
 * One tool call, the same for both protocol eras: the key's rights, the arguments, a slot under both
 * concurrency limits (released in `finally`, whatever happens), the tool itself, and the result's size.
 * Every failure becomes a result with `isError: true` that names its code, so the model can act on it.
 */
export class ToolInvoker {
  constructor(private readonly deps: { catalog: ToolCatalog; limiter: CallLimiter; resultLimitBytes: number; logger: Logger }) {}

  async invoke(name: string, rawArgs: unknown, caller: Caller): Promise<ToolResult> {
    const tool = this.deps.catalog.get(name);
    if (!tool) return failureResult(new ToolFailure({ code: "not_found", message: `there is no tool named "${name}"; tools/list shows the tools` }));
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
      const outcome = await tool.run(args.data, caller);
      return fitResult(successResult(outcome), this.deps.resultLimitBytes, outcome.summary);
    } catch (e) {
      if (e instanceof ToolFailure) return fitResult(failureResult(e), this.deps.resultLimitBytes, `${tool.name} failed with ${e.error.code}`);
      this.deps.logger.error({ err: e, tool: tool.name, requestId: caller.requestId }, "tool call failed");
      return failureResult(ToolFailures.internal());
    } finally {
      await slot.release();
    }
  }
}
