import type { ComponentChildren } from "preact";
import { ApiError } from "../api";
import type { Messages } from "../i18n/messages.en";
import { useT } from "../i18n/locale";

/**
 * What a person reads about an error: the catalog's words for its code in the chosen language, and the
 * server's own words (which name the field) only as the detail; a message the page wrote itself as it is.
 */
export function describeError(e: unknown, t: Messages): { summary: string; detail?: string } {
  if (e instanceof ApiError) {
    let summary = t.errors.byCode[e.code] ?? e.message;
    if (e.code === "rate_limited" && e.retryAfter) {
      const s = Number(e.retryAfter);
      summary = `${summary} ${s < 60 ? t.errors.inSeconds(s) : t.errors.inMinutes(Math.ceil(s / 60))}`;
    }
    return summary === e.message ? { summary } : { summary, detail: e.message };
  }
  return { summary: e instanceof Error ? e.message : String(e) };
}

/** Announced at once by screen readers (role=alert); nothing when there is no error. */
export function ErrorNotice({ error }: { error: unknown }) {
  const t = useT();
  if (error === undefined || error === null) return null;
  const { summary, detail } = describeError(error, t);
  return (
    <p class="notice notice-error" role="alert">
      {summary}
      {detail && (
        <small class="error-detail" translate={false}>
          {" "}
          {t.common.details}: {detail}
        </small>
      )}
    </p>
  );
}

/** A polite announcement of what just happened (role=status). */
export function Done({ children }: { children: ComponentChildren }) {
  return (
    <p class="notice notice-done" role="status">
      {children}
    </p>
  );
}
