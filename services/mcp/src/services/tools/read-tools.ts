import { z } from "zod";
import type { PublicApi } from "../../domain/public-api";
import { ToolFailure, ToolFailures } from "../../errors";
import { readApi } from "./api-calls";
import { fileLink, parseJob, viewJob } from "./jobs";
import { apiBody, defineTool, READ_ONLY, type Tool } from "./tool";

const ModelList = z.looseObject({ data: z.array(z.looseObject({ id: z.string(), operations: z.record(z.string(), z.unknown()).optional() })) });
type ListedModel = z.infer<typeof ModelList>["data"][number];

const MODELS_PER_PAGE = 20;

/**
 * One page of the models that offer `operation`, in the API's order. The cursor is the id of the last
 * model of the previous page, so a model added meanwhile neither repeats nor shifts a page.
 */
function pageOf(models: ListedModel[], args: { operation?: string | undefined; limit?: number | undefined; cursor?: string | undefined }) {
  const matching = args.operation ? models.filter((m) => m.operations !== undefined && Object.hasOwn(m.operations, args.operation!)) : models;
  let start = 0;
  if (args.cursor !== undefined) {
    const at = matching.findIndex((m) => m.id === args.cursor);
    if (at < 0)
      throw new ToolFailure({
        code: "invalid_request",
        message: `cursor "${args.cursor}" is not a model of this list; start again without cursor`,
        http_status: 400,
      });
    start = at + 1;
  }
  const limit = args.limit ?? MODELS_PER_PAGE;
  const page = matching.slice(start, start + limit);
  return { models: page, next_cursor: start + limit < matching.length ? page[page.length - 1]!.id : null };
}
const QuoteAnswer = z.looseObject({ estimated_cost_microrub: z.number() });
const FileAnswer = z.looseObject({ id: z.string(), filename: z.string(), mime_type: z.string(), size_bytes: z.int(), status: z.string() });
const FileListAnswer = z.looseObject({ data: z.array(FileAnswer), has_more: z.boolean(), next_cursor: z.string().nullable() });

/** The answer of our own API in the shape the tool promises; anything else is a fault of ours, not the caller's. */
function expect<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw ToolFailures.internal();
  return parsed.data;
}

/** The tools of `mcp:read`: what exists, what it costs, and the caller's jobs and files. Nothing here is charged. */
export function readTools(deps: { api: PublicApi; inlineResultBytes: number }): Tool[] {
  const { api } = deps;
  return [
    defineTool({
      name: "list_models",
      title: "List models and prices",
      description:
        "Lists the public models, 20 per page (limit up to 100), with the operations each supports and their tariffs in microrubles. Filter with operation: text (create_message, create_response), image_edit (edit_image), image_analysis (analyze_image), ocr (ocr), text_analysis (analyze_text), image_generation. Page with cursor = next_cursor. Use a model's id in the other tools.",
      annotations: READ_ONLY,
      run: async (args, caller) => {
        const list = expect(ModelList, await readApi(api, caller, { method: "GET", path: "/v1/models" }));
        const page = pageOf(list.data, args);
        return {
          structured: { models: page.models, has_more: page.next_cursor !== null, next_cursor: page.next_cursor },
          summary: `${page.models.length} models${args.operation ? ` with ${args.operation}` : ""}: ${page.models.map((m) => m.id).join(", ")}${page.next_cursor ? "; more with cursor=next_cursor" : ""}`,
        };
      },
    }),
    defineTool({
      name: "quote_text",
      title: "Quote a text request",
      description:
        "Estimates the cost of a create_message call with these messages and max_tokens, without reserving or charging anything. The estimate is valid for 30 s; pass it as max_cost_microrub of create_message or create_response to cap the real call. With max_cost_microrub here, an estimate above it is refused with max_cost_exceeded.",
      annotations: READ_ONLY,
      run: async (args, caller) => {
        const quote = expect(QuoteAnswer, await readApi(api, caller, { method: "POST", path: "/v1/chat/quote", body: apiBody(args) }));
        return { structured: { quote }, summary: `estimated cost ${quote.estimated_cost_microrub} microrub (valid 30 s, nothing reserved)` };
      },
    }),
    defineTool({
      name: "quote_media",
      title: "Quote a media job",
      description:
        "Estimates the cost of a media job (operation image_edit, image_analysis, ocr, text_analysis or image_generation) from the same fields the job takes, without reserving anything. Valid for 30 s; pass estimated_cost_microrub as max_cost_microrub of the job. image_edit and image_analysis need the key's images scope, ocr and text_analysis its text scope.",
      annotations: READ_ONLY,
      run: async (args, caller) => {
        const quote = expect(QuoteAnswer, await readApi(api, caller, { method: "POST", path: "/v1/quotes", body: apiBody(args) }));
        return { structured: { quote }, summary: `estimated cost ${quote.estimated_cost_microrub} microrub (valid 30 s, nothing reserved)` };
      },
    }),
    defineTool({
      name: "get_job",
      title: "Get a media job",
      description:
        "Reads a media job started by edit_image, analyze_image, ocr or analyze_text: its status (queued, running, succeeded, failed), billing and, once it succeeded, a link to its result file (and the result itself when it is short text). Poll it every few seconds until it has finished.",
      annotations: READ_ONLY,
      run: async (args, caller) => {
        const job = parseJob(await readApi(api, caller, { method: "GET", path: `/v1/jobs/${encodeURIComponent(args.job_id)}` }));
        const view = await viewJob(api, caller, job, deps.inlineResultBytes);
        return { structured: view.fields, links: view.links, summary: `job ${job.id} is ${job.status}` };
      },
    }),
    defineTool({
      name: "list_files",
      title: "List your files",
      description:
        "Lists your uploaded files and job results, newest first, with their status (only verified files can be used by jobs or downloaded). Page with cursor = next_cursor.",
      annotations: READ_ONLY,
      run: async (args, caller) => {
        const query = new URLSearchParams(Object.fromEntries(Object.entries(apiBody(args)).map(([k, v]) => [k, String(v)])));
        const path = query.size > 0 ? `/v1/files?${query}` : "/v1/files";
        const page = expect(FileListAnswer, await readApi(api, caller, { method: "GET", path }));
        return {
          structured: { files: page.data, has_more: page.has_more, next_cursor: page.next_cursor },
          summary: `${page.data.length} files${page.has_more ? ", more with cursor=next_cursor" : ""}`,
        };
      },
    }),
    defineTool({
      name: "get_file",
      title: "Get a file",
      description: "Reads one of your files: name, type, size, status, and once verified a content_url to download it with the same API key.",
      annotations: READ_ONLY,
      run: async (args, caller) => {
        const file = expect(FileAnswer, await readApi(api, caller, { method: "GET", path: `/v1/files/${encodeURIComponent(args.file_id)}` }));
        if (file.status !== "verified") return { structured: { file }, summary: `file ${file.id} is ${file.status}` };
        const content = fileLink(caller, { file_id: file.id, mime_type: file.mime_type, size_bytes: file.size_bytes });
        return {
          structured: { file, content },
          links: [{ type: "resource_link", uri: content.content_url, name: file.filename, mimeType: file.mime_type, size: file.size_bytes }],
          summary: `file ${file.id} (${file.filename}, ${file.size_bytes} bytes) is verified`,
        };
      },
    }),
  ];
}
