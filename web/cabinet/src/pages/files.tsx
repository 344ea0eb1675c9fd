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
import { useI18n, useT } from "../i18n/locale";
import type { Messages } from "../i18n/messages.en";
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
  const t = useT();
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
    <Layout title={t.nav.files} switcher={false}>
      <p>{t.files.intro}</p>
      <ErrorNotice error={error} />
      {deleted && <Done>{t.files.deleted(deleted)}</Done>}
      <FilesSection budgetZone={me.budget_timezone} remove={remove} />
      <JobsSection budgetZone={me.budget_timezone} remove={remove} />
    </Layout>
  );
}

type Remove = (fileId: string, name: string, after: () => void) => Promise<void>;

function FilesSection({ budgetZone, remove }: { budgetZone: string; remove: Remove }) {
  const { t, tag } = useI18n();
  const c = t.files.columns;
  const pages = usePages();
  const files = useLoad(() => api<FileList>("GET", `/files${query({ limit: PAGE, cursor: pages.cursor })}`), [pages.cursor]);
  return (
    <section aria-labelledby="files-heading">
      <h2 id="files-heading">{t.files.files}</h2>
      <ErrorNotice error={files.error} />
      {files.data && (
        <DataTable
          testId="files"
          columns={[c.name, c.type, { label: c.size, num: true }, c.status, c.uploaded, c.deletedAfter, ACTIONS]}
          rows={files.data.data}
          empty={t.files.noFiles}
          row={(f) => (
            <tr key={f.id}>
              <th scope="row">
                {f.filename}
                {f.purpose === "job_result" && <span class="tag">{t.files.jobResult}</span>}
              </th>
              <td>{f.mime_type}</td>
              <td class="num">{bytes(f.size_bytes, tag)}</td>
              <td>
                <span class={`status status-${f.status}`}>{fileStatus(f, t)}</span>
              </td>
              <td>
                <DateTime iso={f.created_at} budgetZone={budgetZone} />
              </td>
              <td>
                <DateTime iso={f.expires_at} budgetZone={budgetZone} />
              </td>
              <td class="actions">
                {f.status === "verified" && (
                  <a class="button" href={contentUrl(f.id)} download aria-label={t.files.downloadName(f.filename)}>
                    {t.files.download}
                  </a>
                )}{" "}
                <ConfirmButton
                  label={t.files.delete}
                  name={t.files.deleteName(f.filename)}
                  confirmLabel={t.files.deleteConfirm}
                  onConfirm={() => remove(f.id, f.filename, files.reload)}
                />
              </td>
            </tr>
          )}
        />
      )}
      <Pager optional pages={pages} label={t.files.files} hasMore={files.data?.has_more ?? false} next={files.data?.next_cursor} />
    </section>
  );
}

function JobsSection({ budgetZone, remove }: { budgetZone: string; remove: Remove }) {
  const t = useT();
  const c = t.files.jobColumns;
  const pages = usePages();
  const jobs = useLoad(() => api<JobList>("GET", `/jobs${query({ limit: PAGE, after: pages.cursor })}`), [pages.cursor]);
  const off = jobs.error instanceof ApiError && jobs.error.code === "media_disabled";
  return (
    <section aria-labelledby="jobs-heading">
      <h2 id="jobs-heading">{t.files.jobs}</h2>
      {off ? <p>{t.files.mediaOff}</p> : <ErrorNotice error={jobs.error} />}
      {jobs.data && (
        <DataTable
          testId="jobs"
          columns={[c.job, c.operation, c.model, c.status, { label: c.cost, num: true }, c.created, c.result]}
          rows={jobs.data.data}
          empty={t.files.noJobs}
          row={(j) => (
            <tr key={j.id}>
              <th scope="row">
                <code title={j.id}>{j.id.slice(0, 8)}</code>
              </th>
              <td>{j.operation}</td>
              <td>{j.model}</td>
              <td>
                <span class={`status status-${j.status}`}>{t.files.jobStatus[j.status] ?? j.status}</span>
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
                    <a class="button" href={contentUrl(j.result.file_id)} download aria-label={t.files.downloadResult(j.id.slice(0, 8))}>
                      {t.files.download}
                    </a>{" "}
                    <ConfirmButton
                      label={t.files.delete}
                      name={t.files.deleteResult(j.id.slice(0, 8))}
                      confirmLabel={t.files.deleteConfirm}
                      onConfirm={() => remove(j.result!.file_id, t.files.resultOf(j.id.slice(0, 8)), jobs.reload)}
                    />
                  </>
                )}
              </td>
            </tr>
          )}
        />
      )}
      <Pager optional pages={pages} label={t.files.jobs} hasMore={jobs.data?.has_more ?? false} next={jobs.data?.last_id} />
    </section>
  );
}

function JobCost({ job }: { job: JobRecord }) {
  const t = useT();
  if (job.billing.status === "settled" && job.billing.cost_microrub !== null) return <Amount microrub={job.billing.cost_microrub} />;
  if (job.billing.status === "released") return <span>{t.files.nothingCharged}</span>;
  return (
    <span>
      {t.files.upTo} <Amount microrub={job.billing.estimated_cost_microrub} /> {t.files.reserved}
    </span>
  );
}

function fileStatus(f: FileRecord, t: Messages): string {
  const status = t.files.fileStatus[f.status] ?? f.status.replace(/_/g, " ");
  return f.status === "rejected" && f.rejection ? `${status}: ${f.rejection.code.replace(/_/g, " ")}` : status;
}

function bytes(n: number, tag: string): string {
  const units = ["B", "KiB", "MiB", "GiB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${new Intl.NumberFormat(tag, { maximumFractionDigits: i === 0 ? 0 : 1, minimumFractionDigits: i === 0 ? 0 : 1 }).format(v)} ${units[i]}`;
}
