import type { McpToolName, Scope } from "@meter/contracts";
import type { PublicApi } from "../domain/public-api";
import { toolsFor } from "./tool-access";
import { jobTools } from "./tools/job-tools";
import type { JobWaitOptions } from "./tools/jobs";
import { readTools } from "./tools/read-tools";
import { textTools } from "./tools/text-tools";
import type { Tool } from "./tools/tool";

export interface ToolCatalogDeps {
  api: PublicApi;
  jobWait: JobWaitOptions;
  inlineResultBytes: number;
}

/** Every tool, built once per process; what one key sees of it is decided per request. */
export class ToolCatalog {
  private readonly tools: ReadonlyMap<string, Tool>;

  constructor(deps: ToolCatalogDeps) {
    const all = [
      ...readTools({ api: deps.api, inlineResultBytes: deps.inlineResultBytes }),
      ...textTools({ api: deps.api }),
      ...jobTools({ api: deps.api, wait: deps.jobWait, inlineResultBytes: deps.inlineResultBytes }),
    ];
    this.tools = new Map(all.map((t) => [t.name, t]));
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  /** The tools a key with `scopes` may list and call, in a fixed order. */
  visibleTo(scopes: readonly Scope[]): Tool[] {
    return toolsFor(scopes).map((name: McpToolName) => this.tools.get(name)!);
  }
}
