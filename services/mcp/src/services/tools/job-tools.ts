import type { McpToolName } from "@meter/contracts";
import type { PublicApi } from "../../domain/public-api";
import type { Caller, ToolOutcome } from "../../domain/tool-call";
import { ToolFailure, ToolFailures } from "../../errors";
import { newIdempotencyKey, sendPaid } from "./api-calls";
import { parseJob, viewJob, waitForJob, type JobWaitOptions } from "./jobs";
import { apiBody, defineTool, PAID, type Tool } from "./tool";

export interface JobToolDeps {
  api: PublicApi;
  wait: JobWaitOptions;
  inlineResultBytes: number;
}

/**
 * Starts a media job through the public API, waits a bounded time for it, and returns it: finished
 * (its result file as a link, short text inline), failed (`isError`, the job's own error code), or
 * still running, to be polled with get_job. The job's hold and charge are the API's, as for any client.
 */
async function runJob(
  deps: JobToolDeps,
  tool: McpToolName,
  path: string,
  args: Record<string, unknown> & { idempotency_key?: string | undefined },
  caller: Caller,
): Promise<ToolOutcome> {
  const key = args.idempotency_key ?? newIdempotencyKey();
  const res = await sendPaid(deps.api, caller, { method: "POST", path, body: apiBody(args), idempotencyKey: key });
  if (res === "unknown") {
    return {
      structured: { idempotency_key: key, status: "pending" },
      summary: `the answer to ${tool} was lost on the way and the job may have been created: call ${tool} again with the same arguments and idempotency_key "${key}"; it is charged once`,
    };
  }
  if (res.status >= 400) throw ToolFailures.fromApi(res).with({ idempotency_key: key });
  let created;
  try {
    created = parseJob(res.body);
  } catch (e) {
    throw e instanceof ToolFailure ? e.with({ idempotency_key: key }) : e;
  }
  const job = await waitForJob(deps.api, caller, created, deps.wait);
  const view = await viewJob(deps.api, caller, job, deps.inlineResultBytes);
  if (job.status === "failed") {
    throw new ToolFailure(
      { code: job.error?.code ?? "internal_error", message: `job ${job.id} failed: ${job.error?.message ?? "no reason given"}; its reservation was released` },
      { idempotency_key: key, status: "failed", ...view.fields },
    );
  }
  const summary =
    job.status === "succeeded"
      ? `job ${job.id} succeeded${view.fields.result_file ? `; result ${view.fields.result_file.mime_type}, ${view.fields.result_file.size_bytes} bytes at result_file.content_url` : ""}`
      : `job ${job.id} is ${job.status}: poll it with get_job (job_id "${job.id}") every few seconds`;
  return { structured: { idempotency_key: key, status: job.status, ...view.fields }, links: view.links, summary };
}

type JobToolName = "edit_image" | "analyze_image" | "ocr" | "analyze_text";

function jobTool(deps: JobToolDeps, name: JobToolName, path: string, title: string, description: string): Tool {
  return defineTool({ name, title, description, annotations: PAID, run: (args, caller) => runJob(deps, name, path, args, caller) });
}

const SHARED =
  "Paid per the model's tariff (quote it with quote_media; pass the estimate as max_cost_microrub to cap it: above the cap it is refused with max_cost_exceeded before anything is reserved). Waits a short while for the job; if it is still running, poll it with get_job. Give an idempotency_key to make retries safe. Media jobs may be switched off on this service (error media_disabled).";
const FROM_FILES = "Input files must be your own verified uploads (list_files).";

/** The paid media tools: `mcp:invoke` + `images` (image edit and analysis) or + `text` (OCR, text analysis). */
export function jobTools(deps: JobToolDeps): Tool[] {
  return [
    jobTool(
      deps,
      "edit_image",
      "/v1/images/edits",
      "Edit an image",
      `Edits an uploaded image (file_id) following a prompt; the result is a new image file, returned as a link. ${FROM_FILES} ${SHARED}`,
    ),
    jobTool(
      deps,
      "analyze_image",
      "/v1/images/analysis",
      "Analyze images",
      `Analyzes one image (file_id) or several (file_ids), exactly one of the two, with the model's analysis; the result is a JSON file, returned as a link and, when short, in result_text. ${FROM_FILES} ${SHARED}`,
    ),
    jobTool(
      deps,
      "ocr",
      "/v1/ocr",
      "Recognize text (OCR)",
      `Reads the text of images or PDFs (file_id or file_ids, exactly one of the two); the result is a JSON document (text: all pages' text; pages: each page's text, language and confidence), returned as a link and, when short, in result_text. ${FROM_FILES} ${SHARED}`,
    ),
    jobTool(
      deps,
      "analyze_text",
      "/v1/text/analysis",
      "Analyze text",
      `Runs the model's text analysis (e.g. language, sentiment, entities; model-specific settings) on the text given in input (no file needed); the result is a JSON file, returned as a link and, when short, in result_text. ${SHARED}`,
    ),
  ];
}
