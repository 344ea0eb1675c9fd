import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import type { McpFileLink } from "@meter/contracts";
import { ApiUnreachable, type PublicApi } from "../../domain/public-api";
import type { Caller, ToolContent } from "../../domain/tool-call";
import { ToolFailures } from "../../errors";
import { readApi } from "./api-calls";

/** The fields of a job record (docs/api.md "The job record") the tools read; the rest is passed on as it came. */
export const JobAnswer = z.looseObject({
  id: z.string(),
  operation: z.string(),
  status: z.enum(["queued", "running", "succeeded", "failed"]),
  result: z.looseObject({ file_id: z.string(), mime_type: z.string(), size_bytes: z.int() }).nullable(),
  error: z.looseObject({ code: z.string(), message: z.string() }).nullable(),
});
export type JobAnswer = z.infer<typeof JobAnswer>;

export function isFinished(job: JobAnswer): boolean {
  return job.status === "succeeded" || job.status === "failed";
}

export function parseJob(body: unknown): JobAnswer {
  const job = JobAnswer.safeParse(body);
  if (!job.success) throw ToolFailures.internal();
  return job.data;
}

export interface JobWaitOptions {
  maxWaitMs: number;
  /** First pause between two reads; it grows by half each time, up to `maxPollMs`. */
  firstPollMs: number;
  maxPollMs: number;
}

/**
 * Reads the job until it has finished or `maxWaitMs` has passed, and returns the last state seen. A
 * read that fails ends the wait early with what is known: the job goes on and can be polled with get_job.
 */
export async function waitForJob(api: PublicApi, caller: Caller, job: JobAnswer, opts: JobWaitOptions): Promise<JobAnswer> {
  const deadline = Date.now() + opts.maxWaitMs;
  let pause = opts.firstPollMs;
  let current = job;
  while (!isFinished(current) && !caller.signal.aborted) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    try {
      await sleep(Math.min(pause, left), undefined, { signal: caller.signal });
    } catch {
      break; // the client went away
    }
    pause = Math.min(Math.round(pause * 1.5), opts.maxPollMs);
    try {
      const res = await api.call(caller, { method: "GET", path: `/v1/jobs/${encodeURIComponent(current.id)}` });
      if (res.status !== 200) break;
      current = parseJob(res.body);
    } catch (e) {
      if (e instanceof ApiUnreachable) break;
      throw e;
    }
  }
  return current;
}

export interface JobView {
  fields: { job: JobAnswer; result_file?: McpFileLink; result_text?: string };
  links: ToolContent[];
}

/**
 * A job as a tool returns it: the record, a link to its result file (never the bytes of a large one),
 * and the content itself when it is text or JSON of at most `inlineBytes` and the key may read it.
 */
export async function viewJob(api: PublicApi, caller: Caller, job: JobAnswer, inlineBytes: number): Promise<JobView> {
  if (!job.result) return { fields: { job }, links: [] };
  const link = fileLink(caller, job.result);
  const view: JobView = {
    fields: { job, result_file: link },
    links: [{ type: "resource_link", uri: link.content_url, name: `result of job ${job.id}`, mimeType: link.mime_type, size: link.size_bytes }],
  };
  if (isText(link.mime_type) && link.size_bytes <= inlineBytes) {
    const text = await readApi(api, caller, { method: "GET", path: contentPath(link.file_id), rawUpTo: inlineBytes }).catch(() => undefined);
    if (typeof text === "string") view.fields.result_text = text;
  }
  return view;
}

export function fileLink(caller: Caller, file: { file_id: string; mime_type: string; size_bytes: number }): McpFileLink {
  return { file_id: file.file_id, mime_type: file.mime_type, size_bytes: file.size_bytes, content_url: caller.publicBaseUrl + contentPath(file.file_id) };
}

function contentPath(fileId: string): string {
  return `/v1/files/${encodeURIComponent(fileId)}/content`;
}

function isText(mime: string): boolean {
  return mime === "text/plain" || mime === "application/json" || mime.startsWith("text/");
}
