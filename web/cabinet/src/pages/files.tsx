import { useState } from "preact/hooks";
import type { FileList, FileRecord, JobList, JobRecord } from "@meter/contracts";
import { ApiError, api, query } from "../api";
import { Amount } from "../components/amount";
import { DateTime } from "../components/date-time";
import { Layout } from "../components/layout";
import { ConfirmButton } from "../components/confirm-button";
import { ACTIONS, DataTable } from "../components/data-table";
import { Done, ErrorNotice } from "../components/notice";
import { Pager, usePages } from "../components/pager";
import { useLoad } from "../components/use-load";
import { useMember } from "../session";

const PAGE = 20;

/** Where a file's bytes are downloaded from (an attachment: the browser saves it, never shows it here). */
const contentUrl = (fileId: string) => `/cabinet/api/files/${fileId}/content`;

/**
 * The user's files (from the files service) and media jobs (from media-jobs), with their status; files
 * and job results are downloaded and deleted here. They are the user's in every organization, so this
 * page has no organization switcher.
 */
export function FilesPage() {
  const me = useMember();
  const [deleted, setDeleted] = useState<string | undefined>();
  const [error, setError] = useState<unknown>();
  const remove = async (fileId: string, name: string, after: () => void) => {
    setError(undefined);
    setDeleted(undefined);
    try {
      await api("DELETE", `/files/${fileId}`);
      setDeleted(name);
      after();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <Layout title="Files and jobs" switcher={false}>
      <p>Files and jobs belong to you, whichever of your keys made them, in every organization.</p>
      <ErrorNotice error={error} />
      {deleted && <Done>Deleted {deleted}.</Done>}
      <FilesSection budgetZone={me.budget_timezone} remove={remove} />
      <JobsSection budgetZone={me.budget_timezone} remove={remove} />
    </Layout>
  );
}

type Remove = (fileId: string, name: string, after: () => void) => Promise<void>;

function FilesSection({ budgetZone, remove }: { budgetZone: string; remove: Remove }) {
  const pages = usePages();
  const files = useLoad(() => api<FileList>("GET", `/files${query({ limit: PAGE, cursor: pages.cursor })}`), [pages.cursor]);
  return (
    <section aria-labelledby="files-heading">
      <h2 id="files-heading">Files</h2>
      <ErrorNotice error={files.error} />
      {files.data && (
        <DataTable
          testId="files"
          columns={["Name", "Type", { label: "Size", num: true }, "Status", "Uploaded", "Deleted after", ACTIONS]}
          rows={files.data.data}
          empty="No files."
          row={(f) => (
            <tr key={f.id}>
              <th scope="row">
                {f.filename}
                {f.purpose === "job_result" && <span class="tag">job result</span>}
              </th>
              <td>{f.mime_type}</td>
              <td class="num">{bytes(f.size_bytes)}</td>
              <td>
                <span class={`status status-${f.status}`}>{fileStatus(f)}</span>
              </td>
              <td>
                <DateTime iso={f.created_at} budgetZone={budgetZone} />
              </td>
              <td>
                <DateTime iso={f.expires_at} budgetZone={budgetZone} />
              </td>
              <td class="actions">
                {f.status === "verified" && (
                  <a class="button" href={contentUrl(f.id)} download aria-label={`Download ${f.filename}`}>
                    Download
                  </a>
                )}{" "}
                <ConfirmButton
                  label="Delete"
                  name={`Delete ${f.filename}`}
                  confirmLabel="Yes, delete it"
                  onConfirm={() => remove(f.id, f.filename, files.reload)}
                />
              </td>
            </tr>
          )}
        />
      )}
      <Pager optional pages={pages} label="Pages" hasMore={files.data?.has_more ?? false} next={files.data?.next_cursor} />
    </section>
  );
}

function JobsSection({ budgetZone, remove }: { budgetZone: string; remove: Remove }) {
  const pages = usePages();
  const jobs = useLoad(() => api<JobList>("GET", `/jobs${query({ limit: PAGE, after: pages.cursor })}`), [pages.cursor]);
  const off = jobs.error instanceof ApiError && jobs.error.code === "media_disabled";
  return (
    <section aria-labelledby="jobs-heading">
      <h2 id="jobs-heading">Media jobs</h2>
      {off ? <p>Media jobs are turned off on this installation (MEDIA_ENABLED).</p> : <ErrorNotice error={jobs.error} />}
      {jobs.data && (
        <DataTable
          testId="jobs"
          columns={["Job", "Operation", "Model", "Status", { label: "Cost", num: true }, "Created", "Result"]}
          rows={jobs.data.data}
          empty="No jobs."
          row={(j) => (
            <tr key={j.id}>
              <th scope="row">
                <code title={j.id}>{j.id.slice(0, 8)}</code>
              </th>
              <td>{j.operation}</td>
              <td>{j.model}</td>
              <td>
                <span class={`status status-${j.status}`}>{j.status}</span>
                {j.error && <span class="detail"> ({j.error.code})</span>}
              </td>
              <td class="num">
                <JobCost job={j} />
              </td>
              <td>
                <DateTime iso={j.created_at} budgetZone={budgetZone} />
              </td>
              <td class="actions">
                {j.result && (
                  <>
                    <a class="button" href={contentUrl(j.result.file_id)} download aria-label={`Download the result of job ${j.id.slice(0, 8)}`}>
                      Download
                    </a>{" "}
                    <ConfirmButton
                      label="Delete"
                      name={`Delete the result of job ${j.id.slice(0, 8)}`}
                      confirmLabel="Yes, delete it"
                      onConfirm={() => remove(j.result!.file_id, `the result of job ${j.id.slice(0, 8)}`, jobs.reload)}
                    />
                  </>
                )}
              </td>
            </tr>
          )}
        />
      )}
      <Pager optional pages={pages} label="Pages" hasMore={jobs.data?.has_more ?? false} next={jobs.data?.last_id} />
    </section>
  );
}

function JobCost({ job }: { job: JobRecord }) {
  if (job.billing.status === "settled" && job.billing.cost_microrub !== null) return <Amount microrub={job.billing.cost_microrub} />;
  if (job.billing.status === "released") return <span>nothing charged</span>;
  return (
    <span>
      up to <Amount microrub={job.billing.estimated_cost_microrub} /> reserved
    </span>
  );
}

function fileStatus(f: FileRecord): string {
  return f.status === "rejected" && f.rejection ? `rejected: ${f.rejection.code.replace(/_/g, " ")}` : f.status.replace(/_/g, " ");
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}
